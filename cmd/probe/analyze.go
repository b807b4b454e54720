package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/pprof/profile"

	"probe/analyzers"
)

// runAnalyze is `probe analyze [--json] [--rules FILE] PROFILE…`: the rules
// on profiles taken anywhere. With no run to show that replies did not
// change, only work invariant by nature is claimed for load time.
func runAnalyze(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("probe analyze", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the findings as JSON on stdout")
	rulesFile := fs.String("rules", "", "more analyzer rules, a JSON or Jsonnet file")
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return usageError{"usage: probe analyze [--json] [--rules FILE] PROFILE…"}
	}
	rules, err := rulesOf(*rulesFile)
	if err != nil {
		return err
	}
	var cpus []*profile.Profile
	var allocs *profile.Profile
	for _, path := range paths {
		p, err := readProfile(path)
		if err != nil {
			return err
		}
		switch kind := profileKind(p); kind {
		case "cpu":
			cpus = append(cpus, p)
		case "allocs":
			if allocs != nil {
				return usageError{fmt.Sprintf("%s: one allocation profile at a time", path)}
			}
			allocs = p
		default:
			return fmt.Errorf("%s: neither a CPU nor an allocation profile (sample types: %s)", path, strings.Join(analyzers.ValueTypes(p), ", "))
		}
	}
	var cpu *profile.Profile
	if len(cpus) > 0 {
		var err error
		if cpu, err = profile.Merge(cpus); err != nil {
			return fmt.Errorf("merging the CPU profiles: %v", err)
		}
	}
	findings := analyzers.Analyze(cpu, allocs, analyzers.Evidence{Endpoint: "(profiles only)"}, rules)
	if findings == nil {
		findings = []analyzers.Finding{}
	}
	if *asJSON {
		b, _ := json.MarshalIndent(map[string]any{"profiles": paths, "findings": findings}, "", "  ")
		stdout.Write(append(b, '\n'))
		return nil
	}
	if len(findings) == 0 {
		fmt.Fprintln(stdout, "no findings: no rule's work reaches its share of these profiles")
	}
	for i, f := range findings {
		fmt.Fprintf(stdout, "%d. %s [%s, %s] %.0f%% CPU, %.0f%% allocations\n   %s\n   evidence: %s\n   at %s\n", i+1, f.Rule, f.Class, f.Severity,
			100*f.CPUShare, 100*f.AllocShare, f.Suggestion, f.Evidence, strings.Join(f.Frames, " ← "))
	}
	return nil
}

func readProfile(path string) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: not a pprof profile: %v", path, err)
	}
	if len(p.Sample) == 0 {
		return nil, fmt.Errorf("%s: the profile holds no samples", path)
	}
	return p, nil
}

func profileKind(p *profile.Profile) string {
	for _, st := range p.SampleType {
		switch st.Type {
		case "cpu":
			return "cpu"
		case "alloc_space":
			return "allocs"
		}
	}
	return ""
}
