package pipeline

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/internal/proftest"
	"github.com/probehq/probe/result"

	"github.com/google/pprof/profile"
)

// synthetic is a profile of one sample type whose samples sit in main.handle
// under net/http.
func synthetic(typ, unit string) *profile.Profile {
	fns := []*profile.Function{{ID: 1, Name: "net/http.(*conn).serve"}, {ID: 2, Name: "main.handle"}}
	locs := []*profile.Location{{ID: 1, Line: []profile.Line{{Function: fns[0]}}}, {ID: 2, Line: []profile.Line{{Function: fns[1]}}}}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: typ, Unit: unit}}, Function: fns, Location: locs,
		DurationNanos: int64(time.Second), TimeNanos: time.Now().UnixNano()}
	p.Sample = []*profile.Sample{{Location: []*profile.Location{locs[1], locs[0]}, Value: []int64{1e8}}}
	return p
}

func writeProfile(t *testing.T, p *profile.Profile) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.pb.gz")
	proftest.WriteFile(t, path, p)
	return path
}

// A profiled run gets its flame graphs and keeps its raw profiles; one
// without profiles gets neither.
func TestAnalyzeRunDrawsTheFlameGraphs(t *testing.T) {
	run := &result.Run{Microload: "page", Target: "http://t", Errors: map[string]int64{},
		Profiles: &result.Profiles{CPU: synthetic("cpu", "nanoseconds"), Raw: map[string][]byte{"cpu.pb.gz": []byte("raw")}}}
	a := AnalyzeRun(run, nil)
	if !strings.Contains(string(a.Files["flame.html"]), "main.handle") || string(a.Files["cpu.pb.gz"]) != "raw" {
		t.Errorf("files %v", keys(a.Files))
	}
	if _, ok := a.Files["flame-alloc.html"]; ok {
		t.Error("an allocation flame graph without an allocation profile")
	}
	if a := AnalyzeRun(&result.Run{Errors: map[string]int64{}}, nil); len(a.Files) != 0 || a.Findings != nil {
		t.Errorf("an unprofiled run: %+v", a)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Profile files: CPU profiles merge, a second allocation profile is its own
// error (the command makes it a usage error), and a profile of another kind
// is named by its sample types.
func TestReadProfiles(t *testing.T) {
	cpu1, cpu2 := writeProfile(t, synthetic("cpu", "nanoseconds")), writeProfile(t, synthetic("cpu", "nanoseconds"))
	alloc := writeProfile(t, synthetic("alloc_space", "bytes"))
	cpu, allocs, _, err := ReadProfiles([]string{cpu1, cpu2, alloc}, 1<<20)
	if err != nil || cpu == nil || allocs == nil || cpu.Sample[0].Value[0] != 2e8 {
		t.Fatalf("%v, cpu %v, allocs %v", err, cpu, allocs)
	}
	if _, _, _, err := ReadProfiles([]string{alloc, alloc}, 1<<20); !errors.Is(err,
		ErrTwoAllocationProfiles) || !strings.HasPrefix(err.Error(), alloc+": ") {
		t.Errorf("two allocation profiles: %v", err)
	}
	other := writeProfile(t, synthetic("contentions", "count"))
	if _, _, _, err := ReadProfiles([]string{other}, 1<<20); err == nil || !strings.Contains(err.Error(), "sample types: contentions") {
		t.Errorf("a contention profile: %v", err)
	}
	if _, _, _, err := ReadProfiles([]string{cpu1}, 10); err == nil {
		t.Error("a profile larger than the limit was read")
	}
}
