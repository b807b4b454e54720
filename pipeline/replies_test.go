package pipeline

import (
	"testing"

	"github.com/probehq/probe/result"
)

// Session set-up (MCP's initialize) answers another request than the
// endpoint measured: its replies are no evidence about the endpoint's.
func TestRepliesLeaveOutSessionSetup(t *testing.T) {
	run := &result.Run{
		Ops: []*result.OpStats{{Name: "initialize", Setup: true}, {Name: "tools/list"}},
		Digests: []result.Digest{
			{Key: "initialize", Op: "initialize", Requests: 3, Distinct: 1, Top: 1},
			{Key: "tools/list id=2", Op: "tools/list", Requests: 35, Distinct: 1, Top: 2},
			{Key: "tools/list id=3", Op: "tools/list", Requests: 35, Distinct: 1, Top: 3},
		},
	}
	got := replies(run)
	if len(got) != 2 || got[0].Op != "tools/list" || got[1].Op != "tools/list" {
		t.Errorf("replies %+v: want the two tools/list keys alone", got)
	}
}
