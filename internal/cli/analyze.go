package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/pprofio"
	"github.com/probehq/probe/report"
)

// analyzeCommand is `probe analyze [--json] [--rules FILE] PROFILE…`: the
// pipeline's analyze step on profiles taken anywhere. With no run to show
// that replies did not change, only work invariant by nature is claimed
// for load time.
func analyzeCommand(fs *flag.FlagSet) runner {
	asJSON := fs.Bool("json", false, "print the findings as JSON on stdout")
	var prof profileFlags
	fs.StringVar(&prof.rules, "rules", "", "more analyzer rules, a JSON or Jsonnet file")
	prof.registerMaxProfile(fs)
	return func(ctx context.Context, s streams, paths []string) error {
		if len(paths) == 0 {
			return usageError{"usage: probe analyze [--json] [--rules FILE] PROFILE…"}
		}
		if err := prof.validate(); err != nil {
			return err
		}
		rules, err := prof.loadRules(ctx)
		if err != nil {
			return err
		}
		cpu, allocs, err := readProfiles(paths, int64(prof.maxProfile))
		if err != nil {
			return err
		}
		res := analyzers.Analyze(cpu, allocs, analyzers.Evidence{Endpoint: "(profiles only)"}, rules)
		doc := &report.ProfileFindings{Profiles: paths, Findings: res.Findings, Unexplained: res.Unexplained}
		if *asJSON {
			js, err := doc.JSON()
			if err != nil {
				return err
			}
			s.stdout.Write(js)
			return nil
		}
		doc.WriteTable(s.stdout)
		return nil
	}
}

// readProfiles reads CPU profiles (merged) and at most one allocation
// profile.
func readProfiles(paths []string, limit int64) (cpu, allocs *profile.Profile, err error) {
	var cpus []*profile.Profile
	for _, path := range paths {
		p, err := readProfile(path, limit)
		if err != nil {
			return nil, nil, err
		}
		switch kind := profileKind(p); kind {
		case "cpu":
			cpus = append(cpus, p)
		case "allocs":
			if allocs != nil {
				return nil, nil, usageError{fmt.Sprintf("%s: one allocation profile at a time", path)}
			}
			allocs = p
		default:
			return nil, nil, fmt.Errorf("%s: neither a CPU nor an allocation profile (sample types: %s)", path, strings.Join(analyzers.ValueTypes(p), ", "))
		}
	}
	if len(cpus) > 0 {
		if cpu, err = profile.Merge(cpus); err != nil {
			return nil, nil, fmt.Errorf("merging the CPU profiles: %v", err)
		}
	}
	return cpu, allocs, nil
}

// readProfile reads a profile file within limit bytes, as stored and as
// decompressed: a file may be a gzip bomb.
func readProfile(path string, limit int64) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, _, err := pprofio.Read(f, limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
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
