package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/report"
)

// workersServer serves /x with workers at a time, each request taking
// per: a server of known capacity, workers/per requests a second.
func workersServer(t *testing.T, workers int, per time.Duration) *httptest.Server {
	sem := make(chan struct{}, workers)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case sem <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		time.Sleep(per)
		<-sem
		w.Write([]byte("ok\n"))
	}))
	t.Cleanup(s.Close)
	return s
}

func autoRun(t *testing.T, args ...string) (*report.Run, string) {
	t.Helper()
	args = append(args, "--json", "--out", t.TempDir())
	code, stdout, stderr := probeCmd.Run(t, context.Background(), args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep report.Run
	decodeStdout(t, args[0], stdout, &rep)
	if rep.AutoClients == nil {
		t.Fatalf("no auto_concurrency in the report: %s", stdout)
	}
	return &rep, stderr
}

// TestAutoConcurrencyFindsTheCapacity: 4 workers of 50 ms serve 80
// requests a second whatever the clients beyond 4. The ramp sees 1, 2, 4
// grow by about 2× and 8 not grow (78 rps at both), and chooses 4; 8
// only if the 4-client window fell short by 10 % on a busy machine.
func TestAutoConcurrencyFindsTheCapacity(t *testing.T) {
	s := workersServer(t, 4, 50*time.Millisecond)
	rep, stderr := autoRun(t, "http", "--target", s.URL, "--path", "/x", "--concurrency", "auto",
		"--duration", "2s", "--warmup", "200ms")
	c := rep.AutoClients
	t.Logf("chose %d: %s; steps %+v", c.Chosen, c.Why, c.Steps)
	if c.Chosen != 4 && c.Chosen != 8 {
		t.Errorf("chose %d clients (%s); steps %+v", c.Chosen, c.Why, c.Steps)
	}
	if rep.Concurrency != c.Chosen {
		t.Errorf("the run had %d clients, the ramp chose %d", rep.Concurrency, c.Chosen)
	}
	if n := rep.Errors["timeout"]; n > 0 || rep.Latency.Errors > 0 {
		t.Errorf("%d errors (%v)", rep.Latency.Errors, rep.Errors)
	}
	if !strings.Contains(stderr, "clients: ") {
		t.Errorf("stderr does not say the choice: %s", stderr)
	}
}

// TestAutoConcurrencySlowEndpoint: one worker of 1.5 s (a costly sitemap
// on one core) with a 3 s timeout. 32 clients would queue 48 s deep and
// time out; the ramp stops at one client (its median is past 3 s/4).
func TestAutoConcurrencySlowEndpoint(t *testing.T) {
	s := workersServer(t, 1, 1500*time.Millisecond)
	rep, _ := autoRun(t, "http", "--target", s.URL, "--path", "/x", "--concurrency", "auto",
		"--timeout", "3s", "--duration", "3s", "--warmup", "0s")
	c := rep.AutoClients
	if c.Chosen != 1 || !strings.Contains(c.Why, "quarter") {
		t.Errorf("chose %d clients (%s); steps %+v", c.Chosen, c.Why, c.Steps)
	}
	if n := rep.Errors["timeout"]; n > 0 || rep.Latency.Errors > 0 || rep.Latency.Requests == 0 {
		t.Errorf("%d requests, %d errors (%v)", rep.Latency.Requests, rep.Latency.Errors, rep.Errors)
	}
}

// TestConcurrencyFlagWords: --concurrency is a number or auto, auto only
// where the clients can be chosen; a bad word is one line and exit 2.
func TestConcurrencyFlagWords(t *testing.T) {
	target := []string{"--target", "http://127.0.0.1:1"}
	probeCmd.BadInput(t, append([]string{"http", "--path", "/x", "--concurrency", "lots"}, target...), exitUsage,
		"want a number of clients or auto")
	probeCmd.BadInput(t, append([]string{"http", "--path", "/x", "--concurrency", "0"}, target...), exitUsage, "--concurrency 0: want 1 to")
	probeCmd.BadInput(t, []string{"ab", "--fixture", "--concurrency", "auto"}, exitUsage, "--concurrency auto: only probe")
	_, help, _ := probeCmd.Run(t, context.Background(), "http", "-h")
	if !strings.Contains(help, "--concurrency N") || !strings.Contains(help, "auto: a short ramp") {
		t.Errorf("-h does not tell of auto: %s", help)
	}
}

// TestAllChoosesClientsForASlowEndpoint: probe all sends each microload's
// first request alone; /slow's takes 1.2 s (one worker), so its clients
// are chosen by the ramp and the report says why; /fast keeps the flag's.
func TestAllChoosesClientsForASlowEndpoint(t *testing.T) {
	slow := workersServer(t, 1, 1200*time.Millisecond)
	mux := http.NewServeMux()
	mux.HandleFunc("/fast", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	mux.Handle("/slow", slow.Config.Handler)
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	file := clitest.WriteFile(t, "probe.jsonnet", "{ microloads: [ { name: 'fast', path: '/fast' }, { name: 'slow', path: '/slow' } ] }")
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "all", "--file", file, "--target", s.URL, "--settle", "0s",
		"--duration", "2s", "--warmup", "0s", "--concurrency", "8", "--json", "--out", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var suite struct {
		Runs []*report.Run `json:"runs"`
	}
	decodeStdout(t, "all", stdout, &suite)
	if len(suite.Runs) != 2 {
		t.Fatalf("%d runs: %s", len(suite.Runs), stderr)
	}
	fast, slowRun := suite.Runs[0], suite.Runs[1]
	if fast.AutoClients != nil || fast.Concurrency != 8 {
		t.Errorf("fast: %d clients, auto %+v", fast.Concurrency, fast.AutoClients)
	}
	c := slowRun.AutoClients
	if c == nil || c.Chosen != 1 || slowRun.Concurrency != 1 || !strings.Contains(c.Forced, "first reply took") {
		t.Fatalf("slow: %d clients, auto %+v\n%s", slowRun.Concurrency, c, stderr)
	}
	if slowRun.Errors["timeout"] > 0 || slowRun.Latency.Errors > 0 {
		t.Errorf("slow: errors %v", slowRun.Errors)
	}
}

// The other load commands choose the clients as probe all does for an
// endpoint whose first reply takes over a second, unless --concurrency
// was given: then the user's number stands.
func TestHTTPChoosesClientsForASlowEndpointUnlessGiven(t *testing.T) {
	s := workersServer(t, 1, 1200*time.Millisecond)
	for _, c := range []struct {
		args []string
		auto bool
	}{{nil, true}, {[]string{"--concurrency", "3"}, false}} {
		args := append([]string{"http", "--target", s.URL, "--path", "/", "--duration", "2s", "--warmup", "0s", "--json",
			"--out", t.TempDir()}, c.args...)
		code, stdout, stderr := probeCmd.Run(t, context.Background(), args...)
		var rep report.Run
		decodeStdout(t, "http "+strings.Join(c.args, " "), stdout, &rep)
		if !c.auto {
			if rep.AutoClients != nil || rep.Concurrency != 3 {
				t.Errorf("--concurrency 3: %d clients, auto %+v", rep.Concurrency, rep.AutoClients)
			}
			continue
		}
		if a := rep.AutoClients; a == nil || a.Chosen != 1 || !strings.Contains(a.Forced, "first reply took") {
			t.Fatalf("no --concurrency: %d clients, auto %+v\n%s", rep.Concurrency, a, stderr)
		}
		if code != exitOK || rep.Errors["timeout"] > 0 {
			t.Errorf("exit %d, errors %v", code, rep.Errors)
		}
	}
}
