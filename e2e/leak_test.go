package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/probehq/probe/internal/cli/clitest"

	"github.com/probehq/probe/internal/testbuild"
)

// e2eParkForever is a leaked goroutine: nobody sends on its channel.
func e2eParkForever(ch chan int) { <-ch }

// e2eLeakyHandler leaves one goroutine behind each request.
func e2eLeakyHandler(w http.ResponseWriter, r *http.Request) {
	go e2eParkForever(make(chan int))
	fmt.Fprintln(w, "ok")
}

// TestLeakFinding runs probe http --profile against a server of this
// process that leaks a goroutine per request on /leak: report.json holds
// a goroutine-leak finding (class leak) naming the leaked function and
// the handler, and /clean gets none. A goroutineleak that is not a
// profile is one warning line, and the report is still written.
func TestLeakFinding(t *testing.T) {
	probeBin := testbuild.Program(t, "../cmd/probe")
	var badProfile atomic.Bool // set by the test, read by the handler
	mux := http.NewServeMux()
	mux.HandleFunc("/leak", e2eLeakyHandler)
	mux.HandleFunc("/clean", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, r *http.Request) {
		if badProfile.Load() && strings.HasSuffix(r.URL.Path, "/goroutineleak") {
			fmt.Fprintln(w, "<html>not a profile</html>")
			return
		}
		pprof.Index(w, r)
	})
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	type finding struct {
		Rule, Class, Evidence string
		Frames                []string
	}
	run := func(path string) (findings []finding, warnings []map[string]string, leakCheck map[string]any) {
		out := t.TempDir()
		cmd := exec.Command(probeBin, "http", "--path", path, "--target", srv.URL, "--profile", "--duration", "2s",
			"--warmup", "0", "--concurrency", "4", "--experiment=false", "--json", "--out", out)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", path, err, stderr.String())
		}
		if clitest.StackTrace(stderr.String()) {
			t.Errorf("%s: a Go stack trace reached the user:\n%s", path, stderr.String())
		}
		b, err := os.ReadFile(filepath.Join(out, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Findings  []finding
			Warnings  []map[string]string
			LeakCheck map[string]any `json:"leak_check"`
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		return rep.Findings, rep.Warnings, rep.LeakCheck
	}
	fs, _, check := run("/leak")
	var leak *finding
	for i, f := range fs {
		if f.Rule == "goroutine-leak" {
			leak = &fs[i]
		}
	}
	if leak == nil {
		t.Fatalf("/leak: no goroutine-leak finding; leak check %v, findings %+v", check, fs)
	}
	frames := strings.Join(leak.Frames, " ")
	if leak.Class != "leak" || !strings.Contains(frames, "e2e.e2eParkForever") ||
		!strings.Contains(frames, "e2e.e2eLeakyHandler") || !strings.Contains(leak.Evidence, "per 1,000 requests") {
		t.Errorf("/leak: finding %+v: want class leak, the leaked function and the handler, the count per 1,000", *leak)
	}
	if check["source"] != "goroutineleak" {
		t.Errorf("/leak: leak check %v, want the leak profile read", check)
	}
	fs, _, _ = run("/clean")
	for _, f := range fs {
		if f.Class == "leak" {
			t.Errorf("/clean: %+v", f)
		}
	}
	badProfile.Store(true)
	_, warnings, check := run("/clean")
	n := 0
	for _, w := range warnings {
		if w["kind"] == "leak-profile" {
			n++
			if strings.Contains(w["message"], "\n") {
				t.Errorf("a warning of more than one line: %q", w["message"])
			}
		}
	}
	if n != 1 || check["source"] != "goroutine-count" {
		t.Errorf("a leak profile that is not one: %d leak-profile warnings, leak check %v; want 1, goroutine-count", n, check)
	}
}
