package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/internal/cli/clitest"
)

// The frames probe's markers name (serving, the request's body, the reply)
// are the Go runtime's own, and Go 1.27 moved the HTTP/2 server into
// net/http/internal/http2: testdata/h2versions, built with Go 1.26 and
// with Go 1.27, is loaded over HTTP/1.1, h2c and TLS HTTP/2. On each, the
// constant pattern compiled per request is found with a share of the CPU
// serving requests that holds the handler, never "0 % of the CPU serving
// requests", and the decoding of the posted body is never claimed.
func TestMarkersAcrossGoVersionsAndTransports(t *testing.T) {
	for _, goVersion := range []string{"go1.26.8", "go1.27.3"} {
		bin := goBuild(t, filepath.Join("testdata", "h2versions"), ".", "h2versions", "GOTOOLCHAIN="+goVersion, "GOFLAGS=")
		addr, tlsAddr := freeAddr(t), freeAddr(t)
		for tlsAddr == addr {
			tlsAddr = freeAddr(t)
		}
		server := exec.Command(bin, "-addr", addr, "-tls", tlsAddr)
		var serverErr strings.Builder
		server.Stderr = &serverErr
		if err := server.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { server.Process.Kill(); server.Wait() })
		if !answers("http://" + addr + "/debug/pprof/") {
			t.Fatalf("the %s build never answered: %s", goVersion, serverErr.String())
		}
		for _, tc := range []struct {
			transport, target string
			flags             []string
		}{
			{"HTTP/1.1", "http://" + addr, nil},
			{"h2c", "http://" + addr, []string{"--http2"}},
			{"TLS HTTP/2", "https://" + tlsAddr, []string{"--http2", "--insecure"}},
		} {
			t.Run(goVersion+" "+tc.transport, func(t *testing.T) {
				out := t.TempDir()
				args := append([]string{"http", "--target", tc.target, "--pprof", "http://" + addr + "/debug/pprof/",
					"--path", "/work", "--method", "POST", "--header", "Content-Type:application/json",
					"--body", `{"q":"select a from b where c","tags":["x","y"]}`, "--profile", "--experiment=false",
					"--duration", "3s", "--warmup", "1s", "--concurrency", "4", "--json", "--out", out}, tc.flags...)
				code, _, stderr := probeCmd.Run(t, context.Background(), args...)
				if code != exitOK {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				rep := clitest.ReadReport(t, out)
				if rt := rep.TargetRuntime; rt != nil && rt.GoVersion != "" && rt.GoVersion != goVersion { // "": unknown, said in rt.Unknown
					t.Errorf("the target's Go is %s, want %s", rt.GoVersion, goVersion)
				}
				cpu := filepath.Join(out, "cpu.pb.gz")
				checkSharesAgainstPprof(t, goVersion+" "+tc.transport, cpu, rep.Findings)
				handler := cpuUnder(t, cpu, `^main\.work$`)
				if rep.CPU == nil || rep.CPU.Serving < 0.98*handler || handler == 0 {
					t.Errorf("CPU split %+v: serving must hold the handler's %.2f s", rep.CPU, handler)
				}
				found := false
				for _, f := range rep.Findings {
					switch f.Rule {
					case "repeated-regexp-compile":
						found = true
						if f.CPUShareOfRequests < f.CPUShare || strings.Contains(f.Evidence, "(0% of the CPU serving requests)") {
							t.Errorf("%s: %.0f%% of the CPU, %.0f%% of serving: the serving CPU misses the handler (%s)",
								f.Rule, 100*f.CPUShare, 100*f.CPUShareOfRequests, f.Evidence)
						}
					case "repeated-json-decode":
						if f.Class != "info" {
							t.Errorf("the posted body's decoding claimed %s: %s", f.Class, f.Evidence)
						}
					}
				}
				if !found {
					t.Errorf("no repeated-regexp-compile among %s", rules(rep.Findings))
				}
			})
		}
	}
}

// answers says whether a GET of u is answered within 10 s.
func answers(u string) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			return true
		}
	}
	return false
}

// cpuUnder is the CPU seconds of a profile file's samples with a frame re
// matches, as `go tool pprof -focus` counts them.
func cpuUnder(t *testing.T, file, re string) float64 {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.SampleIndexByName("cpu")
	if err != nil {
		t.Fatal(err)
	}
	p.FilterSamplesByName(regexp.MustCompile(re), nil, nil, nil)
	var v int64
	for _, s := range p.Sample {
		v += s.Value[idx]
	}
	return float64(v) / 1e9
}
