package cli

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/report"
)

// srcModule writes a module of one main.go (and more files, name and
// text) in a temporary folder: a --src of the test's own.
func srcModule(t *testing.T, pkg, body string, more ...string) string {
	t.Helper()
	dir := t.TempDir()
	files := append([]string{"go.mod", "module example.com/src\n\ngo 1.22\n", "main.go", "package " + pkg + "\n\n" + body}, more...)
	for i := 0; i+1 < len(files); i += 2 {
		if err := os.WriteFile(filepath.Join(dir, files[i]), []byte(files[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// serverMain is the main.go body (srcModule's) of a server that serves
// handler at route on -addr, with net/http/pprof; decls, its declarations,
// may use flag, fmt, log, net/http, regexp and the packages of imports.
func serverMain(decls, route, handler string, imports ...string) string {
	var more strings.Builder
	for _, p := range imports {
		fmt.Fprintf(&more, "\t%q\n", p)
	}
	return fmt.Sprintf(`import (
	"flag"
	"fmt"
	"log"
	"net/http"
	_ "net/http/pprof"
	"regexp"
%s)

%s
func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	http.HandleFunc(%q, %s)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
`, more.String(), decls, route, handler)
}

// probe http --src builds the server, starts it on a fresh address and
// loads it: every reply is the built server's.
func TestSrcBuildsAndLoadsTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a server")
	}
	out := t.TempDir()
	code, _, stderr := probeCmd.Run(t, context.Background(), "http", "--src", filepath.Join("..", "..", "verify", "testdata", "rules"),
		"--path", "/rules?q=select+a+from+b", "--duration", "1s", "--warmup", "0s", "--concurrency", "2", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rep := clitest.ReadReport(t, out)
	if rep.Latency.Requests < 10 || rep.Latency.Errors != 0 || !strings.HasPrefix(rep.Target, "http://127.0.0.1:") {
		t.Errorf("target %s: %d requests, %d errors: want the built server loaded without errors", rep.Target,
			rep.Latency.Requests, rep.Latency.Errors)
	}
}

// A --src that cannot be built is one line and exit 2: the compiler's first
// error, or why the folder is not a main package.
func TestSrcBadInput(t *testing.T) {
	probeCmd.BadInput(t, []string{"http", "--src", ".", "--target", "http://127.0.0.1:1", "--path", "/"}, exitUsage,
		"--src and --target both name the target")
	probeCmd.BadInput(t, []string{"http", "--run", "{out}", "--path", "/"}, exitUsage, "--run starts what --src builds")
	probeCmd.BadInput(t, []string{"http", "--src", filepath.Join(t.TempDir(), "none"), "--path", "/"}, exitUsage, "not a folder")
	probeCmd.BadInput(t, []string{"http", "--verify", "--profile", "--target", "http://127.0.0.1:1", "--path", "/"}, exitUsage,
		"--verify needs --src DIR")
	probeCmd.BadInput(t, []string{"all", "--verify", "--src", "."}, exitUsage, "--verify needs --src DIR (the source it "+
		"rewrites) and --profile")
	if testing.Short() {
		return
	}
	lib := srcModule(t, "lib", "func F() int { return 1 }\n")
	probeCmd.BadInput(t, []string{"http", "--src", lib, "--path", "/"}, exitUsage, "holds package lib, not a main package")
	broken := srcModule(t, "main", "func main() {\n\tx := 1\n}\n")
	probeCmd.BadInput(t, []string{"all", "--src", broken}, exitUsage, "build failed: ./main.go:4:2: declared and not used: x")
}

// verified runs probe http --src DIR --profile --verify on path (with its
// --param) and reads the report.
func verified(t *testing.T, dir, path string, more ...string) *report.Run {
	t.Helper()
	out := t.TempDir()
	args := append([]string{"http", "--src", dir, "--path", path, "--duration", "2s", "--warmup", "1s", "--concurrency", "2",
		"--profile", "--verify", "--experiment=false", "--out", out}, more...)
	code, _, stderr := probeCmd.Run(t, context.Background(), args...)
	if code != exitOK {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	rep := clitest.ReadReport(t, out)
	for _, v := range rep.Verification {
		if v.Patch != "" {
			if _, err := os.Stat(filepath.Join(out, v.Patch)); err != nil {
				t.Errorf("%s: its patch: %v", v.Finding, err)
			}
		}
	}
	return rep
}

func testdataServer(name string) string { return filepath.Join("..", "..", "verify", "testdata", name) }

// The rules server compiles a constant rule list per request, and its
// replies differ by query: the claim waits for the experiment, whose
// steady cost makes it load-time, and --verify confirms it, the variant
// answering the same for a good part less CPU a request (the fixture's
// notes measured 72–78 %). Should the experiment not tell on a busy
// machine, the claim stays cacheable and its memo is what is confirmed.
func TestVerifyConfirmsTheRulesServersLoadTimeFinding(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two servers and runs 7 loads and the experiment")
	}
	rep := verified(t, testdataServer("rules"), "/rules?q={q}", "--param", "q=select+a+from+b,x%40y.org,..%2F..%2Fetc,hi",
		"--experiment=true")
	var found bool
	for _, v := range rep.Verification {
		if !strings.HasPrefix(v.Finding, "repeated-regexp-compile@") {
			continue
		}
		found = true
		if v.Class != "load-time" && experimentVerdict(rep, "repeated-regexp-compile") != "inconclusive" {
			t.Errorf("%+v: want load-time (the experiment: %s)", v, experimentVerdict(rep, "repeated-regexp-compile"))
		}
		if v.Verdict != report.Confirmed || v.MeasuredSaving == nil || *v.MeasuredSaving < 0.3 || v.RepliesSame == nil ||
			!*v.RepliesSame || v.Rounds != 6 || v.Patch == "" || v.PredictedSaving <= 0 {
			t.Errorf("%+v: want confirmed, replies the same, a saving above 30%% over 6 rounds, a patch", v)
		}
	}
	if !found {
		t.Errorf("the constant rules' compile was not verified: findings %+v, verifications %+v", rep.Findings, rep.Verification)
	}
}

// experimentVerdict is the experiment's verdict on a finding of rule ("":
// not judged).
func experimentVerdict(rep *report.Run, rule string) string {
	if rep.Experiment == nil {
		return ""
	}
	for _, f := range rep.Experiment.Findings {
		if f.Rule == rule {
			return f.Verdict
		}
	}
	return ""
}

// The greet trap parses the client's own template, taken from the query:
// a read too cheap to be sampled, so the profile alone shows no input. The
// templates got different replies, so the finding is held at cacheable
// until the experiment shows a steady cost; the experiment (on, as by
// default) sees the parse's cost move with the template or cannot tell,
// and the claim is never load-time, nor a load-time verification
// confirmed.
func TestTheTemplateTrapIsNeverLoadTime(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a server and runs a load and the experiment")
	}
	tpls := []string{`{{.name}}{{if .formal}}{{printf "%s %s" .title .name}}{{range .items}}{{.}}{{end}}{{end}}` +
		`{{with .address}}{{.street}}, {{.city}} {{.zip | printf "%05s"}}{{else}}{{.country | html}}{{end}}`,
		`<{{.name | printf "%q"}}>`}
	for i := range tpls {
		tpls[i] = url.QueryEscape(tpls[i])
	}
	rep := verified(t, testdataServer("traps"), "/greet?tpl={t}&name=ada", "--param", "t="+strings.Join(tpls, ","),
		"--experiment=true")
	var parse *analyzers.Finding
	for i, f := range rep.Findings {
		if f.Rule == "repeated-template-parse" {
			parse = &rep.Findings[i]
		}
	}
	if parse == nil || parse.Class == "load-time" {
		t.Fatalf("the client's own template: %+v, want a finding that is not load-time", parse)
	}
	for _, v := range rep.Verification {
		if v.Class == "load-time" && v.Verdict == report.Confirmed {
			t.Errorf("%+v: a load-time claim of the client's template confirmed", v)
		}
	}
}

// The package declares a name sync of its own: the variant imports package
// sync under another name, builds, and is measured.
func TestVerifyBesideAUsersOwnSync(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a server and runs a load")
	}
	dir := srcModule(t, "main", serverMain(`const pattern = `+"`"+`^(?i)select\s+.+\s+from\s+\w+(\s+where\s+.+)?$|(?i)<script[^>]*>.*?</script>|\b(?:\d{1,3}\.){3}\d{1,3}\b`+"`"+`

func match(w http.ResponseWriter, r *http.Request) {
	re := regexp.MustCompile(pattern)
	fmt.Fprintln(w, re.MatchString(r.URL.Query().Get("q")), sync)
}
`, "/m", "match"), "other.go", "package main\n\nvar sync = \"s\"\n")
	rep := verified(t, dir, "/m?q=select+a+from+b")
	if len(rep.Verification) == 0 {
		t.Fatalf("nothing verified: findings %+v", rep.Findings)
	}
	for _, v := range rep.Verification {
		if v.Verdict == report.NotBuilt || v.Rounds == 0 {
			t.Errorf("%+v: want the variant built and measured", v)
		}
	}
}

// The shared server's inferred schema is constant, but a helper writes
// the caller's property into it: done once, the one schema's map is
// written by every request at once, and the variant dies under load. probe
// says so in one line (refuted, the crash named) and writes the rest.
func TestVerifyAVariantThatCrashesUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two servers and runs loads")
	}
	rep := verified(t, testdataServer("shared"), "/describe?ext={e}", "--param", "e=a,b,c", "--concurrency", "8")
	if len(rep.Verification) == 0 {
		t.Fatalf("nothing verified: findings %+v", rep.Findings)
	}
	for _, v := range rep.Verification {
		if v.Verdict == report.Confirmed || v.Verdict == report.NotBuilt || !strings.Contains(v.Why, "the variant") ||
			!strings.Contains(v.Why, "concurrent map") || strings.Contains(v.Why, "\n") {
			t.Errorf("%+v: want refuted in one line naming the variant's crash", v)
		}
	}
	if rep.Latency.Requests == 0 || len(rep.Findings) == 0 {
		t.Errorf("the run's own figures were not written: %d requests, %d findings", rep.Latency.Requests, len(rep.Findings))
	}
}

// A variant that answers the first call and hangs on the next, where the
// original answers every call: refuted (it failed a call the original
// answered), not inconclusive.
func TestVerifyAVariantThatHangsIsRefuted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two servers and runs loads")
	}
	dir := srcModule(t, "main", serverMain(`var (
	mu   sync.Mutex
	last *regexp.Regexp
)

// find hangs when it is given the regexp it had before: only a variant
// that compiles it once is.
func find(w http.ResponseWriter, r *http.Request) {
	re := regexp.MustCompile(strings.Repeat("(?i)(select\\s+.+\\s+from\\s+\\w+|<script[^>]*>.*?</script>|a|ab)|", 20) + "x")
	mu.Lock()
	if re == last {
		mu.Unlock()
		select {}
	}
	last = re
	mu.Unlock()
	fmt.Fprintf(w, "found=%q\n", re.FindString("xab"))
}
`, "/find", "find", "strings", "sync"))
	rep := verified(t, dir, "/find")
	if len(rep.Verification) == 0 {
		t.Fatalf("nothing verified: findings %+v", rep.Findings)
	}
	for _, v := range rep.Verification {
		if v.Verdict != report.Refuted || !strings.Contains(v.Why, "the original answered, the variant") {
			t.Errorf("%s: %s (%s), want refuted: the variant failed a call the original answered", v.Finding, v.Verdict, v.Why)
		}
	}
}

// A rule set picked by the request's path, compiled per request: every
// reply of the one path probe loads is the same, so the profile's claim
// is load-time, but the source shows the pattern drawn from the request.
// --verify makes the finding cacheable, says which class was claimed, and
// measures the memo by the pattern, which the one path repeats.
func TestVerifyTurnsALoadTimeClaimOnTheRequestsInputCacheable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two servers and runs loads")
	}
	dir := srcModule(t, "main", serverMain(`var patterns = map[string]string{
	"sql":  strings.Repeat("^(?i)select\\s+.+\\s+from\\s+\\w+(\\s+where\\s+.+)?$|", 8) + "x",
	"html": strings.Repeat("(?i)<script[^>]*>.*?</script>|\\b(?:\\d{1,3}\\.){3}\\d{1,3}\\b|", 8) + "y",
}

func rules(w http.ResponseWriter, r *http.Request) {
	p, ok := patterns[r.PathValue("set")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	re := regexp.MustCompile(p)
	fmt.Fprintln(w, re.NumSubexp())
}
`, "/rules/{set}", "rules", "strings"))
	rep := verified(t, dir, "/rules/sql")
	var v *report.Verification
	for i := range rep.Verification {
		if strings.HasPrefix(rep.Verification[i].Finding, "repeated-regexp-compile@") {
			v = &rep.Verification[i]
		}
	}
	if v == nil {
		t.Fatalf("the compile was not verified: findings %+v, verifications %+v", rep.Findings, rep.Verification)
	}
	if v.Class != "cacheable" || v.Claimed != "load-time" || v.Form != "memo-by-arguments" || !strings.Contains(v.Why, "not load-time") {
		t.Errorf("%+v: want the load-time claim measured as a memo by the request's pattern", v)
	}
	if v.Verdict != report.Confirmed || v.RepliesSame == nil || !*v.RepliesSame {
		t.Errorf("%+v: want the memo confirmed, the replies the same", v)
	}
	for _, f := range rep.Findings {
		if f.Rule == "repeated-regexp-compile" && (f.Class != "cacheable" || !strings.Contains(f.Evidence, "made per request")) {
			t.Errorf("finding %s is %s: %s", f.Rule, f.Class, f.Evidence)
		}
	}
}
