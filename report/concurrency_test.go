package report

import (
	"strings"
	"testing"
)

func TestConcurrencyLines(t *testing.T) {
	if (*Concurrency)(nil).Lines() != nil {
		t.Error("a run without auto has lines")
	}
	c := &Concurrency{Chosen: 1, Forced: "its first reply took 1.5s (over 1 s)", Why: "2 requests timed out at 2 clients",
		Steps: []ConcurrencyStep{{Clients: 1, RPS: 0.66, P50ms: 1500}, {Clients: 2, RPS: 0.7, P50ms: 2900, Timeouts: 2}}}
	lines := c.Lines()
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "concurrency: auto chose 1 client: 2 requests timed out") ||
		!strings.Contains(lines[0], "first reply took") || !strings.Contains(lines[1], "2→0.7 rps p50 2900 ms 2 timeouts") {
		t.Errorf("%q", lines)
	}
}
