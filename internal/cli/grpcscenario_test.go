package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/report/rampreport"
)

// A scenario's gRPC steps, over --http2 on the fixture: a search whose
// first hit's path (a JSON path into the decoded message) feeds a gRPC
// read and then an HTTP page of the same session; a server stream whose
// third message is checked. Every step is called and none fails.
func TestGRPCStepsInAScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the fixture")
	}
	file := clitest.WriteFile(t, "probe.json", `{"scenarios": [{"name": "read", "values": {"q": ["gzip", "cache", "sqlite"]},
	  "steps": [
	    {"name": "search", "grpc": "probe.fixture.Notes/Search", "data": "{\"query\": \"{{q}}\", \"limit\": 3}",
	     "checks": {"contains": ["\"hits\":"]}, "extract": {"path": {"json": "hits[0].path"}}},
	    {"name": "get", "grpc": "probe.fixture.Notes/Get", "data": "{\"path\": \"{{path}}\"}",
	     "checks": {"json": "text"}, "extract": {"title": {"json": "title"}}},
	    {"name": "page", "path": "{{path}}", "checks": {"status": 200}},
	    {"name": "list", "grpc": "probe.fixture.Notes/List", "data": "{\"limit\": 3}",
	     "extract": {"third": {"json": "[2].path"}}}]}]}`)
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "ramp", "--steps", "3,5/1s", "--settle", "0s", "--http2", "--file", file,
		"--notes", "60", "--json", "--out", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep rampreport.Ramp
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %.300s", err, stdout)
	}
	var started, failed int64
	for _, w := range rep.Windows {
		started, failed = started+w.Started, failed+w.Failed
	}
	if started == 0 || failed != 0 {
		t.Fatalf("%d sessions, %d failed: %s", started, failed, stderr)
	}
	calls := map[string]int64{}
	for _, s := range rep.Steps {
		calls[s.Step] = s.Calls
	}
	for _, step := range []string{"read/search", "read/get", "read/page", "read/list"} {
		if calls[step] == 0 {
			t.Errorf("%s: no calls (%v)", step, calls)
		}
	}
}

// A gRPC step fails its session with the reason: a value that makes the
// data no message of the method's input, a check the message does not
// pass, a path the message has no value at. Before the run: an unknown
// method, a target without --http2, a gRPC step with a path.
func TestGRPCStepFailuresInAScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the fixture")
	}
	for _, tc := range []struct{ step, want string }{
		{`{"name": "s", "grpc": "probe.fixture.Notes/Search", "data": "{\"limit\": \"{{q}}\"}"}`, "read/s: not sent: data is not " +
			"a probe.fixture.SearchRequest"},
		{`{"name": "s", "grpc": "probe.fixture.Notes/Search", "data": "{\"query\": \"{{q}}\"}", "checks": {"contains": ` +
			`["no such words"]}}`, `the reply does not hold "no such words"`},
		{`{"name": "s", "grpc": "probe.fixture.Notes/Search", "data": "{\"query\": \"{{q}}\"}", "extract": {"x": {"json": ` +
			`"hits[0].nothing"}}}`, "extract x: the reply has no such value"},
	} {
		file := clitest.WriteFile(t, "probe.json", `{"scenarios": [{"name": "read", "values": {"q": ["gzip"]}, "steps": [`+tc.step+`]}]}`)
		code, stdout, stderr := probeCmd.Run(t, context.Background(), "ramp", "--steps", "2,3/1s", "--http2", "--file", file,
			"--notes", "30", "--json", "--out", t.TempDir())
		var rep rampreport.Ramp
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("exit %d, %v: %s", code, err, stderr)
		}
		var reasons []string
		var failed int64
		for _, w := range rep.Windows {
			failed += w.Failed
			for reason := range w.Errors {
				reasons = append(reasons, reason)
			}
		}
		if failed == 0 || len(reasons) == 0 {
			t.Errorf("%s: no session failed", tc.step)
		}
		for _, r := range reasons {
			if !strings.Contains(r, tc.want) {
				t.Errorf("%s: a session failed with %q, want %q", tc.step, r, tc.want)
			}
		}
	}
	file := clitest.WriteFile(t, "probe.json", `{"scenarios": [{"name": "read", "steps": [{"grpc": "no.Such/Call"}]}]}`)
	probeCmd.BadInput(t, []string{"ramp", "--steps", "2,3/1s", "--http2", "--file", file, "--notes", "30"}, exitError,
		"scenario read: step step1: the server has no service no.Such; it has")
	probeCmd.BadInput(t, []string{"ramp", "--steps", "2,3/1s", "--file", file, "--notes", "30"}, exitError,
		"scenario read: step step1: gRPC runs over HTTP/2: the target needs --http2")
	file = clitest.WriteFile(t, "probe.json", `{"scenarios": [{"name": "read", "steps": [{"grpc": "a.B/C", "path": "/x"}]}]}`)
	probeCmd.BadInput(t, []string{"ramp", "--steps", "2,3/1s", "--file", file, "--target", "http://127.0.0.1:1"}, exitUsage,
		"scenarios[0].steps[0].path: a gRPC step has grpc and data in place of method, path and body")
	file = clitest.WriteFile(t, "probe.json", `{"scenarios": [{"name": "read", "steps": [{"grpc": "a.B/C", "checks": {"status": 200}}]}]}`)
	probeCmd.BadInput(t, []string{"ramp", "--steps", "2,3/1s", "--file", file, "--target", "http://127.0.0.1:1"}, exitUsage,
		"a gRPC step's status and content type are gRPC's")
}
