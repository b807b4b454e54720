package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/internal/proftest"
)

// A finding's share is a claim a user checks with pprof (issue 25: a
// highlighter's 16 % where `go tool pprof -focus` of the same profile
// showed 31 %). checkSharesAgainstPprof runs `go tool pprof -focus` on the
// CPU profile a run wrote, with the rule's frames as the focus (its
// excluded frames and probe's own measuring as -ignore, as the analyzers
// leave them out of the target's CPU), and fails a finding whose share is
// more than two points from pprof's.
func checkSharesAgainstPprof(t *testing.T, name, cpuProfile string, findings []analyzers.Finding) {
	t.Helper()
	for _, off := range sharesOffPprof(t, name, cpuProfile, findings) {
		t.Error(off)
	}
}

// sharesOffPprof says, for each finding more than two points from
// pprof's -focus of the same profile, by how much.
func sharesOffPprof(t *testing.T, name, cpuProfile string, findings []analyzers.Finding) (off []string) {
	t.Helper()
	if _, err := os.Stat(cpuProfile); err != nil {
		return []string{fmt.Sprintf("%s: no CPU profile to check shares against: %v", name, err)}
	}
	rules := map[string]analyzers.Rule{}
	for _, r := range analyzers.DefaultRules() {
		rules[r.ID] = r
	}
	measuring := `^(net/http/pprof|runtime/pprof|github\.com/felixge/fgprof)\.`
	total, ok := pprofSeconds(t, cpuProfile, "", measuring)
	if !ok || total <= 0 {
		return nil
	}
	for _, f := range findings {
		focus, ignore := focusOf(f, rules[f.Rule])
		if focus == "" || f.CPUShare < 0.03 {
			continue // a reply's or a wait's share is not of frames; a sliver is noise
		}
		if ignore != "" {
			ignore = measuring + "|" + ignore
		} else {
			ignore = measuring
		}
		got, ok := pprofSeconds(t, cpuProfile, focus, ignore)
		if !ok {
			continue
		}
		pprofShare := got / total
		// A top-level finding leaves to another the samples it holds, and
		// says how many: pprof's focus counts them for both.
		// Decoding the request's own input is left out of a decoding rule's
		// share, and said too; so is the rest of the work when only the
		// input's decoding reached a finding.
		claimed := f.CPUShare
		for _, m := range countedThere.FindAllStringSubmatch(f.Evidence, -1) {
			v, _ := strconv.ParseFloat(m[1], 64)
			claimed += v / 100
		}
		t.Logf("%s: %s %.1f%%, pprof -focus %.1f%%", name, f.Rule, 100*claimed, 100*pprofShare)
		if d := claimed - pprofShare; d > 0.02 || d < -0.02 {
			off = append(off, fmt.Sprintf("%s: %s claims %.1f%% of the CPU; go tool pprof -focus='%s' -ignore='%s' of the same "+
				"profile shows %.1f%%",
				name, f.Rule, 100*claimed, focus, ignore, 100*pprofShare))
		}
	}
	return off
}

// focusOf is the pprof focus of a finding's work: its rule's frames, or
// the own function a rule without frames names (a full scan's loop); ""
// when the share is not one of frames (a whole reply, contention).
func focusOf(f analyzers.Finding, r analyzers.Rule) (focus, ignore string) {
	switch {
	case r.Detector == "reply" || f.WaitShare > 0 || f.CPUShare == 0:
		return "", ""
	case len(r.Frames) > 0 && (r.Detector == "frames" || r.Detector == "gc"):
		// other_work is not the rule's work either (a regexp's matching under
		// regexp.MatchString, which compiles first): pprof ignores it too.
		return strings.Join(r.Frames, "|"), strings.Join(append(slices.Clone(r.Exclude), r.OtherWork...), "|")
	case (r.Detector == "full-scan" || r.Detector == "per-message" && !strings.Contains(f.Evidence, "a walk of the data")) &&
		f.OwnFrame != "":
		return "^" + regexp.QuoteMeta(f.OwnFrame) + "$", ""
	}
	return "", ""
}

var countedThere = regexp.MustCompile(`a further ([0-9.]+)% of the CPU (?:is this work inside|is this work on other data|decodes ` +
	`the request's own input|allocates under it)`)

var pprofAccounted = regexp.MustCompile(`Showing nodes accounting for ([0-9.]+)(ns|us|µs|ms|s|m|h)\b`)

// pprofSeconds is the CPU seconds of the samples pprof keeps with focus
// and ignore: the sum of every node's flat time, all nodes shown.
func pprofSeconds(t *testing.T, profile, focus, ignore string) (float64, bool) {
	t.Helper()
	args := []string{"tool", "pprof", "-top", "-nodefraction=0", "-nodecount=1000000"}
	if focus != "" {
		args = append(args, "-focus="+focus)
	}
	if ignore != "" {
		args = append(args, "-ignore="+ignore)
	}
	out, err := exec.Command("go", append(args, profile)...).CombinedOutput()
	if err != nil {
		t.Errorf("go tool pprof: %v: %s", err, out)
		return 0, false
	}
	if strings.Contains(string(out), "Main binary filename not available") && !pprofAccounted.Match(out) {
		return 0, true
	}
	m := pprofAccounted.FindSubmatch(out)
	if m == nil {
		if strings.Contains(string(out), "No samples") || strings.Contains(string(out), "no samples") {
			return 0, true
		}
		t.Errorf("go tool pprof printed no total:\n%s", out)
		return 0, false
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	unit := map[string]time.Duration{"ns": time.Nanosecond, "us": time.Microsecond, "µs": time.Microsecond, "ms": time.Millisecond,
		"s": time.Second, "m": time.Minute, "h": time.Hour}[string(m[2])]
	return v * unit.Seconds(), true
}

// TestSharesCheckAgainstPprof holds the check itself to pprof's reading on
// a profile of known shares: 3 s of sort.Sort and 1 s of probe's own
// measuring in 11 s, so sorting is 30 % of the target's CPU.
func TestSharesCheckAgainstPprof(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "cpu.pb.gz")
	writeKnownProfile(t, prof)
	if off := sharesOffPprof(t, "known", prof, []analyzers.Finding{{Rule: "repeated-sort", CPUShare: 0.315}}); len(off) != 0 {
		t.Errorf("a share within two points of pprof's is called off: %v", off)
	}
	off := sharesOffPprof(t, "known", prof, []analyzers.Finding{{Rule: "repeated-sort", CPUShare: 0.36}})
	if len(off) != 1 || !strings.Contains(off[0], "shows 30.0%") {
		t.Errorf("a share six points from pprof's: %v, want one mismatch against 30.0%%", off)
	}
	// A whole reply's share is not one of frames: not checked here.
	if off := sharesOffPprof(t, "known", prof, []analyzers.Finding{{Rule: "repeated-reply", CPUShare: 0.9}}); len(off) != 0 {
		t.Errorf("repeated-reply checked against frames: %v", off)
	}
}

// writeKnownProfile writes a CPU profile of 11 s: 3 s in sort.Sort under
// the handler, 7 s in the handler itself, 1 s in fgprof.
func writeKnownProfile(t *testing.T, path string) {
	fn := func(id uint64, name string) *profile.Function {
		return &profile.Function{ID: id, Name: name, SystemName: name, Filename: name + ".go"}
	}
	fns := []*profile.Function{fn(1, "sort.Sort"), fn(2, "main.handler"), fn(3, "github.com/felixge/fgprof.Start.func1")}
	locs := make([]*profile.Location, len(fns))
	for i, f := range fns {
		locs[i] = &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: f, Line: 1}}}
	}
	sec := int64(time.Second)
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
		Function: fns, Location: locs,
		Sample: []*profile.Sample{
			{Location: []*profile.Location{locs[0], locs[1]}, Value: []int64{300, 3 * sec}},
			{Location: []*profile.Location{locs[1]}, Value: []int64{700, 7 * sec}},
			{Location: []*profile.Location{locs[2]}, Value: []int64{100, sec}},
		}}
	proftest.WriteFile(t, path, p)
}
