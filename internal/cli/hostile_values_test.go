package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/probehq/probe/internal/cli/clitest"
)

// probe ramp against a target whose replies carry hostile values (issue
// 26): an extracted http:// as a path, a CR LF for a header, a ../.. for
// a path after a prefix. The run ends with its report and no stack trace;
// each session fails with its reason; nothing of the refused requests
// reaches the server (only /list, and probe's look for /debug/pprof).
func TestRampWithHostileValues(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path)
		for name := range r.Header {
			seen = append(seen, "header "+name)
		}
		mu.Unlock()
		fmt.Fprintf(w, `{"link": "http://", "token": %q, "id": "../../admin/secret"}`,
			"ok\r\nX-Injected: 1\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x")
	}))
	defer srv.Close()
	list := `{"name": "list", "path": "/list", "extract": {"link": {"json": "link"}, "token": {"json": "token"}, "id": {"json": "id"}}}`
	file := clitest.WriteFile(t, "probe.json", `{"scenarios": [
		{"name": "url", "steps": [`+list+`, {"name": "open", "path": "{{link}}"}]},
		{"name": "split", "steps": [`+list+`, {"name": "login", "path": "/login", "headers": {"X-Token": "{{token}}"}}]},
		{"name": "climb", "steps": [`+list+`, {"name": "item", "path": "/items/{{id}}", "headers": {"Authorization": "Bearer s"}}]}]}`)
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "ramp", "--target", srv.URL, "--file", file,
		"--steps", "3,6/1s", "--stop-when", "never", "--json", "--out", t.TempDir())
	if clitest.StackTrace(stderr) {
		t.Fatalf("a stack trace: %s", stderr)
	}
	if code != exitOK && code != exitError {
		t.Errorf("exit %d: %s", code, stderr)
	}
	var report map[string]any
	if err := json.Unmarshal([]byte(stdout), &report); err != nil {
		t.Fatalf("the report: %v: %.300s", err, stdout)
	}
	for _, want := range []string{
		"url/open: not sent: {{link}} from the reply of step list is a URL of another origin (http: with no host)",
		`split/login: not sent: {{token}} from the reply of step list holds a CR LF (header X-Token)`,
		"climb/item: not sent: {{id}} from the reply of step list holds a dot segment",
	} {
		if !strings.Contains(stdout, strings.ReplaceAll(want, `"`, `\"`)) {
			t.Errorf("the report does not say %q", want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range seen {
		// "/" is the quiet-target check between steps (a GET of the target URL).
		if p != "/list" && p != "/" && !strings.HasPrefix(p, "/debug/") && !strings.HasPrefix(p, "header ") || strings.Contains(p, "Injected") {
			t.Errorf("the server received %q", p)
		}
	}
}
