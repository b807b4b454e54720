package probes

import (
	"net/url"
	"testing"

	"github.com/probehq/probe/lib/h1"
)

// A closed loop over HTTP/1.1 runs its clients in event loops, at most one
// a P, every client in one of them; the open loop, HTTP/2 and
// PROBE_LOOP=0 keep a goroutine a client.
func TestClosedLoopsRunTheClients(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1")
	clients := func(tg *Target, n int) []*Client {
		cs := make([]*Client, n)
		for i := range cs {
			cs[i] = NewClient(tg, 0)
		}
		return cs
	}
	cs := clients(&Target{URL: u}, 9)
	loops := closedLoops(cs, LoadOptions{})
	if want := min(h1.Procs(), 9); len(loops) != want {
		t.Errorf("%d loops for 9 clients at GOMAXPROCS %d, want %d", len(loops), h1.Procs(), want)
	}
	seen := map[any]int{}
	for _, c := range cs {
		if c.loop() == nil {
			t.Fatal("a client of the closed loop in no loop")
		}
		seen[c.loop()]++
	}
	if len(seen) != len(loops) {
		t.Errorf("clients in %d loops of %d", len(seen), len(loops))
	}
	for _, l := range loops {
		l.Run() // no clients started: it ends at once
	}
	for name, tc := range map[string]struct {
		tg *Target
		o  LoadOptions
	}{
		"open loop": {&Target{URL: u}, LoadOptions{Rate: 100}},
		"HTTP/2":    {&Target{URL: u, HTTP2: &HTTP2{}}, LoadOptions{}},
	} {
		if cs := clients(tc.tg, 3); closedLoops(cs, tc.o) != nil || cs[0].loop() != nil {
			t.Errorf("%s: clients in a loop", name)
		}
	}
	t.Setenv("PROBE_LOOP", "0")
	if cs := clients(&Target{URL: u}, 3); closedLoops(cs, LoadOptions{}) != nil {
		t.Error("PROBE_LOOP=0: clients in a loop")
	}
}
