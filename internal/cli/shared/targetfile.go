package shared

import (
	"context"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/plan"
	"github.com/probehq/probe/probes"
)

// A target file is read and checked by package plan (the model, the
// reader, the schema); its Jsonnet is evaluated here, in a guarded child
// (jsonnet.go). targetFile is the view of a read plan.Plan that the load
// and ramp commands use.
type TargetFile struct {
	Path       string
	Target     string
	Pprof      string
	Headers    []h1.Field
	Microloads []fileMicroload
	Scenarios  []*probes.Scenario
	Mix        map[string]float64 // name of a scenario or microload → weight; nil: each scenario once
	Agents     *plan.Agents       // probe agents' tools; nil: the fixture's
	WS         *plan.WS           // probe ws's real-time path; nil: the flags alone
}

// fileMicroload is one entry of the file's microloads.
type fileMicroload struct {
	Name, Use string
	entry     *plan.Microload
}

// microload is the entry as a microload named as the file names it.
func (m fileMicroload) Microload() (probes.Microload, error) { return BuildMicroload(m.entry, false) }

// readTargetFile reads and checks a target file.
func ReadTargetFile(ctx context.Context, path string) (*TargetFile, error) {
	p, err := plan.Read(ctx, path, plan.Options{Jsonnet: evalJsonnet})
	if err != nil {
		return nil, UsageError{"--file " + err.Error()}
	}
	return viewOf(p), nil
}

// parseTargetFile checks a target file's JSON and reads it.
func ParseTargetFile(name string, src []byte) (*TargetFile, error) {
	p, err := plan.Parse(name, src)
	if err != nil {
		return nil, err
	}
	return viewOf(p), nil
}

func viewOf(p *plan.Plan) *TargetFile {
	f := &TargetFile{Path: p.File, Target: p.Target, Pprof: p.Pprof, Headers: p.Header, Mix: p.Mix, Agents: p.Agents, WS: p.WS}
	for i := range p.Microloads {
		m := &p.Microloads[i]
		f.Microloads = append(f.Microloads, fileMicroload{Name: m.Name, Use: m.Use, entry: m})
	}
	for _, sc := range p.Scenarios {
		f.Scenarios = append(f.Scenarios, sc.Probe)
	}
	return f
}
