package analyzers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// note is a notes server's tree: each note's children are notes.
type note struct {
	Title    string  `json:"title"`
	Body     string  `json:"body"`
	Children []*note `json:"children,omitempty"`
}

// noteChain is a chain of depth notes, each with a few leaves: deep
// enough that a sample through the bottom holds more than 128 functions.
func noteChain(depth int) *note {
	root := &note{Title: "root"}
	n := root
	for i := 0; i < depth; i++ {
		c := &note{Title: fmt.Sprintf("note %d", i), Body: strings.Repeat("text ", 20)}
		for j := 0; j < 3; j++ {
			n.Children = append(n.Children, &note{Title: fmt.Sprintf("leaf %d.%d", i, j), Body: "x"})
		}
		n.Children = append(n.Children, c)
		n = c
	}
	return n.fill(root)
}

func (n *note) fill(root *note) *note { return root }

var notes = noteChain(70)

// title is small enough to be inlined into its caller.
func title(n *note) string { return strings.ToUpper(n.Title[:1]) + n.Title[1:] }

// renderNote walks the tree recursively, sorting each note's children and
// encoding each note on its way: recursion in the target's own code, and
// in encoding/json's encoder below it.
func renderNote(b *strings.Builder, n *note, depth int) {
	kids := append([]*note(nil), n.Children...)
	sort.Slice(kids, func(i, j int) bool { return title(kids[i]) < title(kids[j]) })
	if depth%10 == 0 {
		raw, _ := json.Marshal(n)
		b.WriteString(fmt.Sprint(len(raw)))
	}
	b.WriteString(title(n))
	for _, k := range kids {
		renderNote(b, k, depth+1)
	}
}

// wrap is a middleware layer: a server wraps its handlers in many.
func wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) })
}

// Every share a finding states is what `go tool pprof -focus` of the same
// profile shows for its rule's frames, within two points, on a server
// whose samples run deeper than the profile keeps (middleware, recursion
// in its own code and in the encoder) and whose small helpers are inlined.
func TestSharesAreFocusSharesUnderRecursionAndInlining(t *testing.T) {
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		renderNote(&b, notes, 0)
		fmt.Fprint(w, len(b.String()))
	})
	for i := 0; i < 30; i++ {
		h = wrap(h)
	}
	p, rs := loadAndProfile(t, 3*time.Second, h, "/notes")
	deep := 0
	for _, s := range p.Sample {
		n := 0
		for _, l := range s.Location {
			n += len(l.Line)
		}
		if n > 128 {
			deep++
		}
	}
	t.Logf("%d of %d samples hold more than 128 functions", deep, len(p.Sample))
	res := Analyze(p, nil, Evidence{Endpoint: "GET /notes", Replies: rs}, DefaultRules())
	t.Logf("findings: %s; CPU %+v", rules(res.Findings), res.CPU)
	checked := 0
	for i := range res.Findings {
		f := &res.Findings[i]
		r := DefaultRules()[indexOfRule(DefaultRules(), f.Rule)]
		focus := strings.Join(r.Frames, "|")
		if r.Detector == "full-scan" && f.OwnFrame != "" {
			focus = "^" + regexp.QuoteMeta(f.OwnFrame) + "$"
		}
		if focus == "" || f.CPUShare < 0.03 {
			continue
		}
		want := focusShare(p, focus)
		if len(r.Exclude) > 0 {
			want = focusIgnoreShare(p, focus, strings.Join(r.Exclude, "|"))
		}
		claimed := f.CPUShare // and what the evidence says it leaves out
		for _, m := range furtherCounted.FindAllStringSubmatch(f.Evidence, -1) {
			v, _ := strconv.ParseFloat(m[1], 64)
			claimed += v / 100
		}
		t.Logf("%s: %.1f%% (%.1f%% with what it leaves out), pprof -focus %.1f%% (%s)", f.Rule, 100*f.CPUShare, 100*claimed, 100*want, f.Evidence)
		if claimed < want-0.02 || claimed > want+0.02 {
			t.Errorf("%s states %.1f%% of the CPU; pprof -focus on its frames shows %.1f%%", f.Rule, 100*claimed, 100*want)
		}
		checked++
	}
	if checked == 0 {
		t.Errorf("no finding's share to check: %s", rules(res.Findings))
	}
	if find(res.Findings, "repeated-json-encode") == nil {
		t.Errorf("want repeated-json-encode: %s", rules(res.Findings))
	}
	if handler := cpuUnder(p, `analyzers\.(renderNote|wrap\.func1)$|^encoding/json`); res.CPU.Serving < 0.98*handler {
		t.Errorf("serving %.2f s, but the handler's samples (cut at the profile's depth) took %.2f s: %+v", res.CPU.Serving, handler, res.CPU)
	}
}

var sortKeys = func() []string {
	ks := make([]string, 600)
	for i := range ks {
		ks[i] = fmt.Sprintf("key-%07d", (i*7919)%601)
	}
	return ks
}()

// sortAndEncode encodes the notes and sorts keys whose comparison now and
// then encodes a key: the sort's samples and the encoding's overlap, and
// neither lies half inside the other.
func sortAndEncode(w http.ResponseWriter, r *http.Request) {
	var raw []byte
	for i := 0; i < 3; i++ {
		raw, _ = json.Marshal(notes)
	}
	ks := append([]string(nil), sortKeys...)
	n := 0
	sort.Slice(ks, func(i, j int) bool {
		if n++; n%60 == 0 {
			b, _ := json.Marshal(notes.Children[0])
			return len(b)+len(ks[i]) < len(ks[j])+len(b)
		}
		return ks[i] < ks[j]
	})
	fmt.Fprint(w, len(raw), ks[0], served.Add(1)) // a reply of its own: no repeated reply holds the rest
}

var served atomic.Int64

// Two top-level findings whose samples overlap each keep pprof's share;
// the overlap is said (cpu_share_shared), not taken off the header.
func TestOverlappingFindingsKeepPprofsShare(t *testing.T) {
	p, fs := analyzeLoad(t, 3*time.Second, http.HandlerFunc(sortAndEncode), "GET /sorted", "/sorted")
	t.Logf("findings: %s", rules(fs))
	enc, srt := find(fs, "repeated-json-encode"), find(fs, "repeated-sort")
	if enc == nil || srt == nil {
		t.Skipf("want repeated-json-encode and repeated-sort on this machine: %s", rules(fs))
	}
	checkFocus(t, "sorted", enc, p, strings.Join(DefaultRules()[indexOfRule(DefaultRules(), "repeated-json-encode")].Frames, "|"))
	checkFocus(t, "sorted", srt, p, strings.Join(DefaultRules()[indexOfRule(DefaultRules(), "repeated-sort")].Frames, "|"))
	// Both top-level (a full scan of the handler may hold both: then they
	// are its parts, each with its own share).
	if enc.PartOf == "" && srt.PartOf == "" && enc.CPUShareShared+srt.CPUShareShared == 0 {
		t.Errorf("the sort's encoding is in both findings, and neither says so: %s / %s", enc.Evidence, srt.Evidence)
	}
	var top float64
	for _, f := range fs {
		if f.PartOf == "" {
			top += f.CPUShare - f.CPUShareShared
		}
	}
	if top > 1.0001 {
		t.Errorf("top-level shares less their shared parts add up to %.0f%%: %s", 100*top, rules(fs))
	}
}
