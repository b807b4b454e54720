package fuzzreport

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/probehq/probe/result"
)

// recorded is one request as a server read it.
type recorded struct {
	method, target string
	header         http.Header
	body           []byte
}

// TestReproSendsTheSameBytes runs each crash's repro line in bash against
// a server that records what it gets, and compares that with the crash's
// request: method, target, the fuzzed headers and the body, byte for byte.
func TestReproSendsTheSameBytes(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl to run the repro lines")
	}
	got := make(chan recorded, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- recorded{r.Method, r.RequestURI, r.Header, b}
	}))
	defer srv.Close()
	for _, c := range []*result.FuzzCrash{
		{Method: "GET", Path: "/region?n=1", Header: []result.FuzzField{{Name: "X-Region", Value: "é\t'\"$(x)`\\ \xff"}}},
		{Method: "M-SE'ARCH!", Path: "/a/../b/[x]{y}?q=%00"},
		{Method: "HEAD", Path: "/h", Header: []result.FuzzField{{Name: "X-Empty", Value: ""}, {Name: "Cookie", Value: "a=x%20y; b=1"}}},
		{Method: "POST", Path: "/q", Body: []byte("{\"s\": \"\\u0000'\\n\"}\x00\xff\r\n")},
		{Method: "PUT", Path: "/j", Header: []result.FuzzField{{Name: "Content-Type", Value: "application/json"}}, Body: []byte(`[1]`)},
	} {
		dir := t.TempDir()
		base := "crashers/1-panic"
		if len(c.Body) > 0 {
			os.MkdirAll(filepath.Join(dir, "crashers"), 0o755)
			os.WriteFile(filepath.Join(dir, base+".body"), c.Body, 0o644)
		}
		line := reproLine(FuzzSetting{ReproBase: srv.URL}, c, base)
		cmd := exec.Command("bash", "-c", line)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		r := <-got
		if r.method != c.Method || r.target != c.Path || !bytes.Equal(r.body, c.Body) {
			t.Errorf("%s\nsent %s %s %q, want %s %s %q", line, r.method, r.target, r.body, c.Method, c.Path, c.Body)
		}
		for _, h := range c.Header {
			if v, ok := r.header[http.CanonicalHeaderKey(h.Name)]; !ok || len(v) != 1 || v[0] != h.Value {
				t.Errorf("%s\nheader %s: sent %q, want %q", line, h.Name, v, h.Value)
			}
		}
		if ct := r.header.Get("Content-Type"); len(c.Body) > 0 && c.Header == nil && ct != "" {
			t.Errorf("%s\nsent Content-Type %q that probe did not", line, ct)
		}
	}
}

func TestRequestTextShowsTheFuzzedHeaders(t *testing.T) {
	got := requestText(result.FuzzRequest{Method: "PROPFIND", Path: "/x", Header: []result.FuzzField{{Name: "X-Region", Value: "eu"}},
		Body: []byte("{}")})
	if got != "PROPFIND /x [X-Region: eu] {}" {
		t.Errorf("%q", got)
	}
	if !strings.Contains(requestText(result.FuzzRequest{Method: "GET", Path: "/" + strings.Repeat("a", 3000)}), "bytes in all") {
		t.Error("a long input is not cut")
	}
}
