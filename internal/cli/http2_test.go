package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/probehq/probe/lib/h2/h2ctest"
)

// h2cServer is a server that speaks HTTP/1.1 and h2c with prior knowledge,
// counting each protocol's requests and its connections.
func h2cServer(t *testing.T) (url string, h2, h1 *atomic.Int64, conns *atomic.Int64) {
	h2, h1 = &atomic.Int64{}, &atomic.Int64{}
	s := h2ctest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			h2.Add(1)
		} else {
			h1.Add(1)
		}
		fmt.Fprintf(w, "item %s", r.URL.Query().Get("id"))
	}), true)
	return s.URL.String(), h2, h1, &s.Conns
}

// probe http --http2 loads over h2c: every request a stream, the clients
// sharing connections by --streams, the report saying how it loaded.
func TestHTTP2LoadsOverH2C(t *testing.T) {
	url, h2, h1, conns := h2cServer(t)
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "http", "--target", url, "--path", "/item?id={id}", "--param", "id=1,2,3",
		"--http2", "--streams", "4", "--concurrency", "8", "--duration", "1s", "--warmup", "0s", "--json", "--out", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Protocol    string `json:"protocol"`
		Connections struct {
			Opened int `json:"opened"`
		} `json:"connections"`
		Latency struct {
			Requests int64 `json:"requests"`
			Errors   int64 `json:"errors"`
		} `json:"latency"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %.300s", err, stdout)
	}
	if !strings.Contains(rep.Protocol, "HTTP/2 (h2c") || !strings.Contains(rep.Protocol, "4 streams") {
		t.Errorf("protocol %q", rep.Protocol)
	}
	if rep.Latency.Requests < 10 || rep.Latency.Errors != 0 {
		t.Errorf("%d requests, %d errors", rep.Latency.Requests, rep.Latency.Errors)
	}
	// The HTTP/2 check before the run, then 8 clients on 2 connections.
	if h1.Load() != 0 || h2.Load() < rep.Latency.Requests || conns.Load() > 4 {
		t.Errorf("server saw %d HTTP/1 and %d HTTP/2 requests on %d connections, probe counted %d", h1.Load(), h2.Load(), conns.Load(),
			rep.Latency.Requests)
	}
}

// A TLS server is loaded over h2 by ALPN with --insecure for its own
// certificate; without --insecure the certificate is an error, one line.
func TestHTTP2OverTLS(t *testing.T) {
	var mu sync.Mutex
	protos := map[string]int{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protos[r.Proto]++
		mu.Unlock()
		fmt.Fprint(w, "ok")
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	code, _, stderr := probeCmd.Run(t, context.Background(), "http", "--target", srv.URL, "--path", "/", "--http2", "--insecure",
		"--concurrency", "2", "--duration", "500ms", "--warmup", "0s", "--out", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mu.Lock()
	if protos["HTTP/1.1"] != 0 || protos["HTTP/2.0"] == 0 {
		t.Errorf("protocols seen: %v", protos)
	}
	mu.Unlock()
	probeCmd.BadInput(t, []string{"http", "--target", srv.URL, "--path", "/", "--http2", "--duration", "500ms"}, exitError, "--insecure accepts")
}

func TestHTTP2BadInput(t *testing.T) {
	h1only := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer h1only.Close()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"http", "--target", h1only.URL, "--path", "/", "--http2"}, exitError, "answers HTTP/1.1, not HTTP/2 with " +
			"prior knowledge (h2c)"},
		{[]string{"http", "--target", h1only.URL, "--path", "/", "--streams", "4"}, exitUsage, "--streams needs --http2"},
		{[]string{"http", "--target", h1only.URL, "--path", "/", "--http2", "--streams", "0"}, exitUsage, "--streams 0"},
		{[]string{"http", "--target", "https://127.0.0.1:1", "--path", "/"}, exitUsage, "add --http2"},
		{[]string{"http", "--target", h1only.URL, "--path", "/", "--http2", "--insecure"}, exitUsage, "--insecure applies to an https://"},
	} {
		probeCmd.BadInput(t, tc.args, tc.code, tc.want)
	}
}
