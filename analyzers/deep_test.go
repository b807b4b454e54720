package analyzers

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/pprofio"
)

// deepProfile is a gzipped CPU profile of one sample whose stack is depth
// frames of the target's own recursive function under a request handler.
func deepProfile(t testing.TB, depth int) []byte {
	fn := &profile.Function{ID: 1, Name: "main.recurse", Filename: "/work/app/main.go"}
	h := &profile.Function{ID: 2, Name: "net/http.HandlerFunc.ServeHTTP", Filename: "/usr/local/go/src/net/http/server.go"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn, Line: 10}}}
	hl := &profile.Location{ID: 2, Line: []profile.Line{{Function: h, Line: 20}}}
	stack := make([]*profile.Location, depth, depth+1)
	for i := range stack {
		stack[i] = loc
	}
	stack = append(stack, hl)
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
		Sample:   []*profile.Sample{{Location: stack, Value: []int64{300, 3 * sec}}},
		Location: []*profile.Location{loc, hl}, Function: []*profile.Function{fn, h},
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A hostile target's profile of one sample of a million frames of its own
// function (2 KB gzipped) is analysed at once: each stack keeps its
// outermost and innermost 64 frames, the unexplained path 32 of each end
// with the middle said, and the path's length is bounded. It took 23.6 s
// at 50,000 frames and did not end at a million (a quadratic join).
func TestDeepStackIsAnalysedAtOnce(t *testing.T) {
	for _, depth := range []int{200_000, 1_000_000} {
		raw := deepProfile(t, depth)
		p, _, err := pprofio.Parse(raw, 0)
		if err != nil {
			t.Fatal(err)
		}
		// A generous bound, not a timing: the quadratic analysis took
		// hours here; the bounded one takes milliseconds.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		res := AnalyzeContext(ctx, p, nil, Evidence{}, DefaultRules())
		cancel()
		if res.Interrupted {
			t.Fatalf("%d frames: not analysed within 3 minutes", depth)
		}
		if len(res.Unexplained) != 1 {
			t.Fatalf("%d frames: unexplained %+v", depth, res.Unexplained)
		}
		u := res.Unexplained[0]
		note := "… " + map[int]string{200_000: "199,936", 1_000_000: "999,936"}[depth] + " frames …"
		if u.Function != "main.recurse" || len(u.Path) != 2*pathEdge+1 || u.Path[pathEdge] != note || u.Elided != depth-2*pathEdge {
			t.Errorf("%d frames: function %s, %d path entries, elided %d, middle %q; want %q", depth, u.Function, len(u.Path), u.Elided,
				u.Path[min(pathEdge, len(u.Path)-1)], note)
		}
		if n := len(strings.Join(u.Path, " → ")); n > 2000 {
			t.Errorf("%d frames: a path of %d bytes", depth, n)
		}
		if tail := u.PathTail(4, " → "); !strings.HasPrefix(tail,
			"("+map[int]string{200_000: "199,996", 1_000_000: "999,996"}[depth]+" outer frames)") {
			t.Errorf("%d frames: tail %q", depth, tail)
		}
	}
}

// An analysis whose context has ended returns at once, saying so: Ctrl-C
// and SIGTERM end it whatever the profile holds.
func TestCancelledAnalysisReturns(t *testing.T) {
	p, _, err := pprofio.Parse(deepProfile(t, 1_000_000), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := AnalyzeContext(ctx, p, nil, Evidence{}, DefaultRules())
	if !res.Interrupted || len(res.Findings)+len(res.Unexplained) != 0 {
		t.Errorf("cancelled: %+v", res)
	}
	if res := AnalyzeContext(context.Background(), cpuWithGzip(), nil, Evidence{}, DefaultRules()); res.Interrupted || len(res.Findings) == 0 {
		t.Errorf("not cancelled: %+v", res)
	}
}
