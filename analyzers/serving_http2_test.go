package analyzers

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/probehq/probe/lib/frames"
)

// h2Work is a handler of the target's own: it reads the posted body,
// counts primes and writes a reply of some kilobytes.
func h2Work(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	res, _, _ := countPrimes(r.Context(), nil, primeArgs{N: 2000 + len(body)})
	w.Write([]byte(res.Content[1].(*mcp.TextContent).Text))
}

// Go 1.27 moved the HTTP/2 server into net/http/internal/http2: the frames
// probe's markers name (serving, the request's body, the reply) are the
// runtime's own, so each is tested on a server of the Go this test runs,
// over h2c and over TLS, by what the profile holds.
func TestMarkersHoldHTTP2Servers(t *testing.T) {
	for _, tls := range []bool{false, true} {
		name := map[bool]string{false: "h2c", true: "TLS"}[tls]
		t.Run(name, func(t *testing.T) {
			p := loadHTTP2(t, tls, 2*time.Second)
			res := Analyze(p, nil, Evidence{Endpoint: "POST /work"}, DefaultRules())
			handler := cpuUnder(p, `analyzers\.h2Work$`)
			h2 := cpuUnder(p, `^net/http/internal/http2\.|^net/http\.\(\*http2`)
			t.Logf("%s: CPU split %+v; h2Work %.2f s, the HTTP/2 server %.2f s", name, res.CPU, handler, h2)
			if h2 == 0 {
				t.Fatalf("no HTTP/2 server frame in the profile: did the client speak HTTP/2?")
			}
			if handler < 0.3 {
				t.Skipf("the handler took %.2f s of CPU: too few samples on this machine", handler)
			}
			if res.CPU.Serving < 0.98*handler {
				t.Errorf("serving %.2f s, but the handler took %.2f s under the HTTP/2 server", res.CPU.Serving, handler)
			}
			rules := DefaultRules()
			samples, _ := Samples(p, "cpu", frames.Code{})
			for _, m := range []struct{ marker, frame string }{
				{markRequestBody, `http2.*\(\*requestBody\)\.Read$`},
				{markSending, `http2.*\(\*responseWriter\)\.(Write|write)$`},
			} {
				re := regexp.MustCompile(m.frame)
				rule := &rules[slices.IndexFunc(rules, func(r Rule) bool { return r.ID == m.marker })]
				seen, missed := 0, 0
				for _, s := range samples {
					if !slices.ContainsFunc(s.Funcs, re.MatchString) {
						continue
					}
					seen++
					if rule.matchAt(s.stack()) < 0 {
						missed++
					}
				}
				if missed > 0 {
					t.Errorf("%s: %d of the %d samples under %s are not marked", m.marker, missed, seen, m.frame)
				}
			}
		})
	}
}

// loadHTTP2 serves h2Work over HTTP/2 (h2c, or TLS) from this process and
// posts to it from four clients for d (longer on a busy machine), under a
// CPU profile.
func loadHTTP2(t *testing.T, useTLS bool, d time.Duration) *profile.Profile {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/work", h2Work)
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.Protocols = new(http.Protocols)
	tr := &http.Transport{Protocols: new(http.Protocols)}
	if useTLS {
		srv.EnableHTTP2 = true
		srv.Config.Protocols.SetHTTP2(true)
		srv.StartTLS()
		tr.TLSClientConfig = &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
		tr.Protocols.SetHTTP2(true)
	} else {
		srv.Config.Protocols.SetUnencryptedHTTP2(true)
		srv.Start()
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	defer srv.Close()
	client := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	var n atomic.Int64
	return profileWhile(t, d, 4, func(done func() bool) {
		for !done() {
			body := strings.NewReader(fmt.Sprint(n.Add(1), strings.Repeat("x", 4096)))
			resp, err := client.Post(srv.URL+"/work", "text/plain", body)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.ProtoMajor != 2 {
				t.Errorf("%s: want HTTP/2", resp.Proto)
				return
			}
		}
	})
}
