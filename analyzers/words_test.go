package analyzers

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// pinned is a note with a large inline body: sort.Slice's swapper
// allocates one element's room on every call.
type pinned struct {
	body [16 << 10]byte
	rank int
}

var pinnedNotes = []pinned{{rank: 1}, {rank: 2}, {rank: 3}}

// sortPinned sorts three notes already in order: the sort swaps nothing,
// and its only cost is the swapper's allocation.
func sortPinned(w http.ResponseWriter, r *http.Request) {
	sort.Slice(pinnedNotes, func(i, j int) bool { return pinnedNotes[i].rank < pinnedNotes[j].rank })
	fmt.Fprint(w, pinnedNotes[0].rank)
}

// allocShare is the share of p's alloc_space under a frame re matches.
func allocShare(p *profile.Profile, re string) float64 {
	idx, _ := p.SampleIndexByName("alloc_space")
	var total, focused int64
	for _, s := range p.Sample {
		total += s.Value[idx]
	}
	q := p.Copy()
	q.FilterSamplesByName(regexp.MustCompile(re), nil, nil, nil)
	for _, s := range q.Sample {
		focused += s.Value[idx]
	}
	return share(focused, total)
}

// A sort is CPU: a sort whose only cost is what sort.Slice allocates is
// no repeated sort (moving it to load time would save no sorting).
func TestASortThatOnlyAllocatesIsNoRepeatedSort(t *testing.T) {
	before := heapProfile(t)
	p, rs := loadAndProfile(t, 2*time.Second, http.HandlerFunc(sortPinned), "/pinned")
	allocs := heapDelta(t, before, heapProfile(t))
	sortRe := strings.Join(DefaultRules()[indexOfRule(DefaultRules(), "repeated-sort")].Frames, "|")
	cpu, alloc := focusShare(p, sortRe), allocShare(allocs, sortRe)
	t.Logf("sort: %.1f%% of the CPU, %.1f%% of the allocations", 100*cpu, 100*alloc)
	if alloc < 0.1 {
		t.Skipf("the trap did not set: sort %.0f%% of allocations, %.0f%% of CPU", 100*alloc, 100*cpu)
	}
	fs := Analyze(p, allocs, Evidence{Endpoint: "GET /pinned", Replies: rs}, DefaultRules()).Findings
	if f := find(fs, "repeated-sort"); f != nil {
		t.Errorf("a sort that only allocates is claimed: %s (%s)", rules(fs), f.Evidence)
	}
}

// logLines writes the same lines to a log file on every request, with
// fmt, no logging library.
func logLines(log *os.File) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 8; i++ {
			fmt.Fprintf(log, "notes: cache miss for %s, loading all notes (%d)\n", r.URL.Path, i)
		}
		fmt.Fprint(w, "ok")
	}
}

// formatReply formats a reply: fmt into the response, not a log line.
func formatReply(w http.ResponseWriter, r *http.Request) {
	for i := 0; i < 200; i++ {
		fmt.Fprintf(w, "<li>note %d: %s</li>\n", i, r.URL.Path)
	}
}

// The same lines written on every request (with fmt, to a file) are a log
// storm; fmt formatting a reply is not.
func TestALogStormWithoutALoggerIsNamed(t *testing.T) {
	log, err := os.Create(filepath.Join(t.TempDir(), "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	p, fs := analyzeLoad(t, 2*time.Second, logLines(log), "GET /notes", "/notes")
	f := mustFind(t, fs, "log-storm")
	t.Logf("log-storm %.0f%%: %s", 100*f.CPUShare, f.Evidence)
	if !strings.Contains(f.Evidence, "writes lines with fmt straight into a file") {
		t.Errorf("the storm's evidence does not say how the lines are written: %s", f.Evidence)
	}
	// The test's own client formats each request line with fmt.Fprintf
	// (net/http's Request.write): pprof's focus leaves it out as probe does.
	if want := focusIgnoreShare(p, `^fmt\.Fprintf$`, `^net/http\.\(\*Request\)\.write$`); f.CPUShare < want-0.02 || f.CPUShare > want+0.02 {
		t.Errorf("log-storm %.1f%%, pprof -focus=fmt.Fprintf -ignore=Request.write %.1f%%", 100*f.CPUShare, 100*want)
	}
	if _, fs := analyzeLoad(t, 1500*time.Millisecond, http.HandlerFunc(formatReply), "GET /list", "/list"); find(fs, "log-storm") != nil {
		t.Errorf("fmt formatting a reply is called a log storm: %s", rules(fs))
	}
}

// buildAt is own code whose name starts with a verb and whose work is
// library calls with none: repeating and upper-casing text.
func buildAt(w http.ResponseWriter, r *http.Request) {
	s := strings.ToUpper(strings.Repeat("notes at noon; ", 2000))
	fmt.Fprint(w, len(s), served.Add(1))
}

// An unexplained entry says what the function calls, by name, and claims
// to know what it does only when a heavy call's name says so: never by
// reading the target's own name back ("builds at") or a library's inner
// helper ("appends seq").
func TestUnexplainedSaysWhatItCalls(t *testing.T) {
	p, rs := loadAndProfile(t, 2*time.Second, http.HandlerFunc(buildAt), "/at")
	res := Analyze(p, nil, Evidence{Endpoint: "GET /at", Replies: rs}, DefaultRules())
	var u *Unexplained
	for i := range res.Unexplained {
		if strings.HasSuffix(res.Unexplained[i].Function, ".buildAt") {
			u = &res.Unexplained[i]
		}
	}
	if u == nil {
		t.Fatalf("buildAt not unexplained: %+v (findings %s)", res.Unexplained, rules(res.Findings))
	}
	t.Logf("unexplained: %.0f%% %s", 100*u.CPUShare, u.CallsInWords())
	if u.LooksLike != "" {
		t.Errorf("an unexplained entry reads words from names that say nothing: %q", u.LooksLike)
	}
	if len(u.Callees) == 0 && u.OwnShare == 0 {
		t.Errorf("an unexplained entry names no call: %+v", u)
	}
	var named float64
	for _, c := range u.Callees {
		named += c.CPUShare
	}
	if named+u.OwnShare < 0.8*u.CPUShare {
		t.Errorf("its calls and own code hold %.0f%% of its %.0f%%: %s", 100*(named+u.OwnShare), 100*u.CPUShare, u.CallsInWords())
	}
}

// churn allocates a fresh buffer per line: garbage for the collector.
func churn(w http.ResponseWriter, r *http.Request) {
	n := 0
	for i := 0; i < 400; i++ {
		b := make([]byte, 1024+i)
		n += len(b)
	}
	fmt.Fprint(w, n)
}

// A gc-pressure finding's allocation share is that of the sites it
// names: never "0% of its allocations" over a list of allocation sites.
func TestGCPressureHeaderAgreesWithItsSites(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	_, allocs, fs := analyzeLoadWithAllocs(t, 2*time.Second, http.HandlerFunc(churn), "GET /churn", "/churn")
	f := find(fs, "gc-pressure")
	if f == nil {
		t.Skipf("no gc-pressure on this machine: %s", rules(fs))
	}
	t.Logf("gc-pressure %.0f%% CPU, %.0f%% allocations: %s", 100*f.CPUShare, 100*f.AllocShare, f.Evidence)
	if want := allocShare(allocs, `analyzers\.churn$`); f.AllocShare < want-0.02 || f.AllocShare > 1.0001 {
		t.Errorf("gc-pressure states %.0f%% of the allocations; the site it names, churn, holds %.0f%% (%s)", 100*f.AllocShare, 100*want,
			f.Evidence)
	}
	if strings.Contains(f.Evidence, " 0% of its allocations") || !strings.Contains(f.Evidence, "churn") {
		t.Errorf("evidence: %s", f.Evidence)
	}
}
