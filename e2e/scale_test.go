package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/probehq/probe/fixtures/vault"
	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/rampreport"
)

// serveStatic serves the Markdown notes of dir as they were at start, on
// $ADDR: a server that never shows a change. It takes exactly one
// argument, an existing folder, and when $PROBE_TEST_ARGV names a file it
// appends its arguments there (a JSON list a line).
func serveStatic(dir string) {
	if log := os.Getenv("PROBE_TEST_ARGV"); log != "" {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			line, _ := json.Marshal(os.Args[1:])
			f.Write(append(line, '\n'))
			f.Close()
		}
	}
	if st, err := os.Stat(dir); len(os.Args) != 3 || err != nil || !st.IsDir() {
		fmt.Fprintf(os.Stderr, "static-server: want one argument, a folder: got %q\n", os.Args[2:])
		os.Exit(2)
	}
	notes := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(dir, p)
			notes["/"+strings.TrimSuffix(filepath.ToSlash(rel), ".md")], _ = os.ReadFile(p)
		}
		return nil
	})
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			return // "reloaded", and nothing changes
		}
		if b, ok := notes[r.URL.Path]; ok {
			w.Write(b)
			return
		}
		if r.URL.Path == "/sitemap.xml" {
			fmt.Fprint(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
			for p := range notes {
				fmt.Fprintf(w, "<url><loc>http://%s%s</loc></url>", r.Host, p)
			}
			fmt.Fprint(w, "</urlset>")
			return
		}
		http.NotFound(w, r)
	})
	http.ListenAndServe(os.Getenv("ADDR"), nil)
}

// scaleReport is report.json of probe scale.
type scaleReport = rampreport.Scale

// On the fixture, per-request mode's page work and a change's sync grow
// with the vault; load-time mode's do not, and a sync costs a fraction.
// The page's work is judged by its profile: the CPU a request costs
// swings by half with what else the machine runs (a Go server under
// contention spends more of it scheduling), a share of the same profile
// does not.
func TestScaleOnTheFixture(t *testing.T) {
	reps := map[string]scaleReport{}
	for _, mode := range []string{"per-request", "load-time"} {
		code, stdout, stderr := probeCmd.Run(t, context.Background(), "scale", "page", "--fixture-mode", mode, "--notes", "150,300,600",
			"--changes", "2", "--duration", "1500ms", "--warmup", "300ms", "--concurrency", "4", "--profile", "--json", "--out", t.TempDir())
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", mode, code, stderr)
		}
		var r scaleReport
		decodeStdout(t, mode, stdout, &r)
		if len(r.Points) != 3 || len(r.Growth) == 0 || len(r.Sentence) == 0 {
			t.Fatalf("%s: %.500s", mode, stdout)
		}
		reps[mode] = r
	}
	pr, lt := reps["per-request"], reps["load-time"]
	cpu := func(r scaleReport, i int) float64 { return r.Points[i].Microloads["page"].CPUPerReqMS }
	scan := func(r scaleReport, i int) float64 {
		for _, f := range r.Points[i].Microloads["page"].Findings {
			if f.Rule == "per-request-full-scan" {
				return f.CPUShare
			}
		}
		return 0
	}
	// Four times the notes: the feed walk's share of the page's CPU grows
	// (22% → 43% on a quiet machine), or its CPU a page does (its share
	// times the page's CPU: on CI's busy runner the collector the walk
	// feeds grew faster than the walk, 28% → 25% of a page that went
	// 0.34 → 1.97 ms), or, where the profiles fell short on a busy
	// machine, the CPU a page costs does (2.5× quiet, 1.8× busy); at the
	// same size the walk costs several times the cached page.
	walk := func(i int) float64 { return scan(pr, i) * cpu(pr, i) }
	grows := scan(pr, 2) >= 0.2 && (scan(pr, 2) > scan(pr, 0) || walk(2) >= 1.5*walk(0)) ||
		scan(pr, 2) == 0 && cpu(pr, 2) >= 1.5*cpu(pr, 0)
	if !grows || cpu(pr, 2) < 2*cpu(lt, 2) {
		t.Errorf("per-request: the scan's share %.2f → %.2f, CPU %.3f → %.3f ms a page (load-time's %.3f at the largest): "+
			"want the walk to grow with the notes", scan(pr, 0), scan(pr, 2), cpu(pr, 0), cpu(pr, 2), cpu(lt, 2))
		for _, p := range pr.Points {
			t.Logf("per-request at %d notes: %s; findings %s", p.Notes, p.Error, rules(p.Microloads["page"].Findings))
		}
	}
	for i := range 3 {
		if s := scan(lt, i); s > 0 {
			t.Errorf("load-time at %d notes: per-request-full-scan %.2f", lt.Points[i].Notes, s)
		}
	}
	for _, g := range lt.Growth {
		if g.Figure == "cpu_per_req_ms.page" && (g.Shape == "linear" || g.Shape == "superlinear") {
			t.Errorf("load-time: %s (CPU %.3f → %.3f ms a page)", g.Says, cpu(lt, 0), cpu(lt, 2))
		}
	}
	// A change's cost is the target's CPU over the write: its time grew
	// 1.9× for four times the notes on a machine busy with other tests
	// (1,387 → 2,582 ms), its CPU is what the sync does.
	write := func(r scaleReport, i int) float64 {
		if r.Points[i].WriteCPUMS == nil {
			t.Fatalf("no write CPU read of a target probe started: %+v", r.Points[i])
		}
		return *r.Points[i].WriteCPUMS
	}
	if write(pr, 2) < 2*write(pr, 0) || write(lt, 2)*5 > write(pr, 2) {
		t.Errorf("a change's CPU: per-request %.1f → %.1f ms, load-time %.1f → %.1f ms (its time %.1f → %.1f, %.1f → %.1f): "+
			"want the full re-render to grow and cost five times the incremental sync", write(pr, 0), write(pr, 2),
			write(lt, 0), write(lt, 2), pr.Points[0].WriteMS, pr.Points[2].WriteMS, lt.Points[0].WriteMS, lt.Points[2].WriteMS)
	}
	for _, p := range append(pr.Points, lt.Points...) {
		if p.Lost != 0 {
			t.Errorf("%d notes: %d changes lost", p.Notes, p.Lost)
		}
	}
	// --changes 2 is a minimum: millisecond changes are timed more often.
	for i := range 3 {
		if pr.Points[i].Changes < 2 || lt.Points[i].Changes <= 2 {
			t.Errorf("%d notes: %d changes timed per-request, %d load-time: want at least 2, and more when each takes milliseconds",
				pr.Points[i].Notes, pr.Points[i].Changes, lt.Points[i].Changes)
		}
	}
}

// line, and the report is still written.
func TestScaleLostChanges(t *testing.T) {
	self, _ := os.Executable()
	out := t.TempDir()
	code, _, stderr := probeCmd.Run(t, context.Background(), "scale", "page", "--cmd", self+" static-server {vault}", "--vault-gen",
		"--notes", "20,40",
		"--changes", "1", "--sync-path", "/nosync", "--freshness-timeout", "1s", "--duration", "500ms", "--warmup", "0", "--concurrency",
		"2", "--out", out)
	if code != exitError || !strings.Contains(stderr, "changes never showed within 1s") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	var r scaleReport
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil || json.Unmarshal(raw, &r) != nil || len(r.Points) != 2 || r.Points[0].Lost != 1 {
		t.Errorf("report: %v %.400s", err, raw)
	}
	// Its pages are Markdown, not HTML: the page microload's requests fail
	// their checks, and the figures of failing requests are marked.
	if !strings.Contains(string(raw), `"kind": "failed-requests"`) {
		t.Errorf("no failed-requests warning: %.600s", raw)
	}
}

// probe scale --vault DIR serves a copy of DIR and writes its changes into
// the copy, never into DIR, and removes the copy; the server command gets
// the copy's path as one argument, though it holds a space, quotes and a
// $ (issue 26, #7 and #12).
func TestScaleVaultIsOneArgumentAndUntouched(t *testing.T) {
	base := t.TempDir()
	tmp := filepath.Join(base, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	argvLog := filepath.Join(base, "argv.log")
	t.Setenv("PROBE_TEST_ARGV", argvLog)
	var vaults []string
	for i, name := range []string{`my vault 'one' $HOME`, `my "vault" two $x`} {
		dir := filepath.Join(base, name)
		if err := vault.Generate(dir, vault.Options{Notes: 10 * (i + 1), Seed: 1}); err != nil {
			t.Fatal(err)
		}
		vaults = append(vaults, dir)
	}
	before := map[string]map[string]string{}
	for _, v := range vaults {
		before[v] = clitest.TreeState(t, v)
	}
	self, _ := os.Executable()
	args := []string{"scale", "page", "--cmd", report.ShellQuote(self) + " static-server {vault}",
		"--vault", vaults[0], "--vault", vaults[1], "--write-files", "--changes", "1", "--freshness-timeout", "300ms",
		"--duration", "200ms", "--warmup", "0", "--concurrency", "1", "--json", "--out", filepath.Join(base, "out")}
	code, stdout, stderr := probeCmd.Run(t, context.Background(), args...)
	// The static server never shows a change: exit 1 for the lost ones,
	// with both sizes measured.
	if code != exitError || !strings.Contains(stderr, "changes never showed") {
		t.Errorf("exit %d, want 1 for the lost changes: %s", code, stderr)
	}
	var r scaleReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || len(r.Points) != 2 || r.Points[0].Changes < 1 || r.Points[0].Lost == 0 {
		t.Errorf("report: %v %.400s", err, stdout)
	}
	raw, _ := os.ReadFile(argvLog)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 {
		t.Fatalf("the server started %d times, want 2: %q", len(lines), raw)
	}
	for i, line := range lines {
		var got []string
		if err := json.Unmarshal([]byte(line), &got); err != nil || len(got) != 2 || got[0] != "static-server" {
			t.Errorf("server %d got %q: want static-server and the vault as one argument", i, line)
			continue
		}
		if filepath.Base(got[1]) != filepath.Base(vaults[i]) || !strings.HasPrefix(got[1], tmp+string(filepath.Separator)) {
			t.Errorf("server %d served %q: want a copy of %q under %s", i, got[1], vaults[i], tmp)
		}
	}
	for _, v := range vaults {
		after := clitest.TreeState(t, v)
		for rel, st := range before[v] {
			if after[rel] != st {
				t.Errorf("%s: %s changed: %.80q → %.80q", v, rel, st, after[rel])
			}
		}
		for rel := range after {
			if _, ok := before[v][rel]; !ok {
				t.Errorf("%s: %s appeared", v, rel)
			}
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left in the temporary folder: %v", left)
	}
}
