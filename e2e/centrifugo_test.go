package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/probehq/probe/internal/cli/clitest"
)

const centrifugoModule = "github.com/centrifugal/centrifugo/v6@v6.9.1"

// startCentrifugo runs Centrifugo, a real-time messaging server nobody here
// wrote, on a free loopback port: anonymous clients may connect and
// subscribe (client.insecure), its HTTP API publishes with an API key, and
// its pprof is on (debug.enabled).
func startCentrifugo(t *testing.T, apiKey string) string {
	t.Helper()
	bin := buildFromProxy(t, centrifugoModule, "centrifugo")
	port := freePortT(t)
	config := clitest.WriteFile(t, "config.json", fmt.Sprintf(`{"http_server": {"address": "127.0.0.1", "port": %s},
		"client": {"insecure": true, "allowed_origins": ["*"]}, "http_api": {"key": %q},
		"debug": {"enabled": true}, "log": {"level": "warn"}}`, port, apiKey))
	// It prints no URL to wait for: its pprof answering is the sign.
	srv := exec.Command(bin, "--config", config)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Signal(os.Interrupt); srv.Wait() })
	url := "http://127.0.0.1:" + port
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if res, err := http.Get(url + "/debug/pprof/"); err == nil {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Centrifugo did not answer at %s", url)
		}
	}
	return url
}

// probe ws on Centrifugo: connect and subscribe in one first message (its
// JSON protocol takes commands a line each), publish through its HTTP API
// with the key as a header. Every event arrives once and in its room, the
// server is profiled, and the per-delivery experiment claims nothing: its
// fan-out does per subscriber only what it must, write to the socket.
func TestWSCentrifugo(t *testing.T) {
	url := startCentrifugo(t, "probe-test-key")
	code, stderr, d := wsReport(t, "--target", url, "--connections", "1000", "--rooms", "10", "--events", "10", "--rounds", "2",
		"--pause", "1s", "--ws-path", "/connection/websocket", "--auth", "none",
		"--hello", "{\"id\":1,\"connect\":{}}\n{\"id\":2,\"subscribe\":{\"channel\":\"{room}\"}}", "--ready", `"id":2`,
		"--publish-path", "/api/publish", "--publish-body", `{"channel":"{room}","data":{"e":"{event}"}}`,
		"--header", "X-API-Key: probe-test-key", "--profile")
	if code != exitOK || d == nil || d.Failed() || d.Totals.Delivered != 20000 || d.Ready.Ready != 1000 {
		t.Fatalf("exit %d, report %+v\n%s", code, d, stderr)
	}
	if len(d.Server.Timeline) == 0 || d.Server.RSSPeakBytes == 0 {
		t.Errorf("the server over time: %+v", d.Server)
	}
	if d.Experiment == nil || d.Experiment.Skipped != "" {
		t.Errorf("the per-delivery experiment did not run: %+v", d.Experiment)
	}
	for _, f := range d.Findings {
		if f.Class == "load-time" || f.Rule == "per-delivery-work" {
			t.Errorf("claimed on Centrifugo: %s [%s] %.0f%%: %s", f.Rule, f.Class, 100*f.CPUShare, f.Evidence)
		}
	}
	// Without the key its API refuses the publishes: one failed publish is
	// a failed run, said in one line.
	code, stderr, _ = wsReport(t, "--target", url, "--connections", "20", "--rooms", "2", "--events", "1", "--rounds", "1",
		"--pause", "200ms", "--ws-path", "/connection/websocket", "--auth", "none",
		"--hello", "{\"id\":1,\"connect\":{}}\n{\"id\":2,\"subscribe\":{\"channel\":\"{room}\"}}", "--ready", `"id":2`,
		"--publish-path", "/api/publish", "--publish-body", `{"channel":"{room}","data":{"e":"{event}"}}`)
	if code != exitError {
		t.Errorf("publishes without the API key: exit %d: %s", code, stderr)
	}
}
