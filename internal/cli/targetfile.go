package cli

import (
	"maps"
	"slices"

	"context"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/plan"
	"github.com/probehq/probe/probes"
)

// A target file is read and checked by package plan (the model, the
// reader, the schema); its Jsonnet is evaluated here, in a guarded child
// (jsonnet.go). targetFile is the view of a read plan.Plan that the load
// and ramp commands use.
type targetFile struct {
	path       string
	target     string
	pprof      string
	headers    []h1.Field
	microloads []fileMicroload
	scenarios  []*probes.Scenario
	mix        map[string]float64 // name of a scenario or microload → weight; nil: each scenario once
	agents     *plan.Agents       // probe agents' tools; nil: the fixture's
	ws         *plan.WS           // probe ws's real-time path; nil: the flags alone
}

// fileMicroload is one entry of the file's microloads.
type fileMicroload struct {
	name, use string
	entry     *plan.Microload
}

// microload is the entry as a microload named as the file names it.
func (m fileMicroload) microload() (probes.Microload, error) { return buildMicroload(m.entry, false) }

// readTargetFile reads and checks a target file.
func readTargetFile(ctx context.Context, path string) (*targetFile, error) {
	p, err := plan.Read(ctx, path, plan.Options{Jsonnet: evalJsonnet})
	if err != nil {
		return nil, usageError{"--file " + err.Error()}
	}
	return viewOf(p), nil
}

// parseTargetFile checks a target file's JSON and reads it.
func parseTargetFile(name string, src []byte) (*targetFile, error) {
	p, err := plan.Parse(name, src)
	if err != nil {
		return nil, err
	}
	return viewOf(p), nil
}

func viewOf(p *plan.Plan) *targetFile {
	f := &targetFile{path: p.File, target: p.Target, pprof: p.Pprof, headers: p.Header, mix: p.Mix, agents: p.Agents, ws: p.WS}
	for i := range p.Microloads {
		m := &p.Microloads[i]
		f.microloads = append(f.microloads, fileMicroload{name: m.Name, use: m.Use, entry: m})
	}
	for _, sc := range p.Scenarios {
		f.scenarios = append(f.scenarios, sc.Probe)
	}
	return f
}

// sortedNames are a map's keys in order.
func sortedNames(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}
