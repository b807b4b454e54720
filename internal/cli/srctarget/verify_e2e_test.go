package srctarget

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/internal/testbuild"
	"github.com/probehq/probe/target"
	"github.com/probehq/probe/verify"
)

// verifyCase is a test server's hot site, the requests that exercise it, and
// the most CPU the variant may spend against the original's.
type verifyCase struct {
	server, fn, mark, callee string
	class                    verify.Class
	outer                    [2]string // the caller's function and mark, for a helper's site
	inputs                   []string  // paths with queries, cycled
	maxRatio                 float64   // 0: replies only (the saving is too small to assert)
}

var verifyCases = map[string]verifyCase{
	"rules": {server: "rules", fn: "match", mark: "rules", callee: "regexp.MustCompile", class: verify.LoadTime,
		inputs:   []string{"/rules?q=select+a+from+b", "/rules?q=x%40y.org", "/rules?q=..%2F..%2Fetc", "/rules?q=hi"},
		maxRatio: 0.7},
	"page": {server: "page", fn: "render", mark: "page", callee: "text/template.(*Template).Parse", class: verify.LoadTime,
		inputs: []string{"/page?name=ada", "/page?name=%3Cb%3E", "/page?name="}, maxRatio: 0.85},
	"schema": {server: "schema", fn: "compile", mark: "schema resolve", class: verify.LoadTime,
		callee: "github.com/google/jsonschema-go/jsonschema.(*Schema).Resolve",
		outer:  [2]string{"validate", "schema compile"},
		// One error at most per document: which of several the library
		// reports depends on map order, in the original too.
		inputs: []string{"/validate?doc=" + url.QueryEscape(order(`[{"sku":"AB12","qty":2}]`)),
			"/validate?doc=" + url.QueryEscape(order(`[]`)), "/validate?doc=nope"}, maxRatio: 0.6},
	// No constant to hoist: memoised by the catalog the server loaded.
	"held": {server: "held", fn: "schemaOf", mark: "held resolve", class: verify.LoadTime,
		callee: "github.com/google/jsonschema-go/jsonschema.(*Schema).Resolve",
		outer:  [2]string{"(*server).validate", "held schema"},
		inputs: []string{"/validate?doc=" + url.QueryEscape(heldDoc("abc")), "/validate?doc=" + url.QueryEscape(heldDoc("A")),
			"/validate?doc=nope"}, maxRatio: 0.7},
	// A trap memoised by its input: inputs that repeat make it cheaper.
	"trap template": {server: "traps", fn: "greet", mark: "trap template", callee: "text/template.(*Template).Parse",
		class: verify.Cacheable, inputs: []string{"/greet?tpl=" + url.QueryEscape(greetTemplate) + "&name=a",
			"/greet?tpl=" + url.QueryEscape("<{{.name | printf \"%q\"}}>"+greetTemplate) + "&name=b"}, maxRatio: 0.8},
	"trap regexp": {server: "traps", fn: "grep", mark: "trap regexp", callee: "regexp.Compile", class: verify.Cacheable,
		inputs: []string{"/grep?pat=a%2Bb&s=aab", "/grep?pat=%5E%5Cd%7B3%7D%24&s=123", "/grep?pat=(&s=x"}},
}

// heldDoc is a document of the held server's catalog, each field v.
func heldDoc(v string) string {
	var f []string
	for i := range 40 {
		f = append(f, fmt.Sprintf("%q:%q", fmt.Sprintf("f%02d", i), v))
	}
	return "{" + strings.Join(f, ",") + "}"
}

func order(lines string) string {
	return `{"id":"ABC-123456","customer":{"name":"a","email":"a@b.co"},"lines":` + lines + `}`
}

// greetTemplate is a client's template that is long to parse and short to
// run (the branch is not taken): the memo's saving is the parse.
const greetTemplate = `{{.name}}{{if .formal}}{{printf "%s %s" .title .name}}{{range .items}}{{.}}{{end}}` +
	`{{with .address}}{{.street}}, {{.city}} {{.zip | printf "%05s"}}{{else}}{{.country | html}}{{end}}{{end}}`

func TestVerifiedVariantsAnswerTheSameForLessCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two binaries per case")
	}
	for name, c := range verifyCases {
		t.Run(name, func(t *testing.T) { c.run(t) })
	}
}

func (c verifyCase) run(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := filepath.Join("..", "..", "..", "verify", "testdata", c.server)
	site := verify.Site{Callee: c.callee, Frames: []verify.Frame{frameAt(t, dir, c.fn, c.mark)}}
	if c.outer[0] != "" {
		site.Frames = append(site.Frames, frameAt(t, dir, c.outer[0], c.outer[1]))
	}
	v, err := verify.Rewrite(dir, site, c.class)
	if err != nil {
		t.Fatal(err)
	}
	overlay, err := v.WriteOverlay(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	before, after := start(ctx, t, dir, ""), start(ctx, t, dir, overlay)
	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	// Every input once on each, replies compared; this also fills the
	// variant's once or memo before anything is counted.
	for _, in := range c.inputs {
		a, b := get(t, client, before, in), get(t, client, after, in)
		if a != b {
			t.Fatalf("%s: the variant answers %q, the original %q", in, b, a)
		}
	}
	if c.maxRatio == 0 {
		return
	}
	n := calibrate(t, client, before, c.inputs)
	// Interleaved rounds, CPU summed per side: a neighbour's load lands on
	// both alike, and CPU time (not wall time) is what is compared.
	var cpu [2]time.Duration
	for range 3 {
		for i, ch := range []*target.Child{before, after} {
			cpu[i] += round(t, client, ch, c.inputs, n)
		}
	}
	ratio := float64(cpu[1]) / float64(cpu[0])
	t.Logf("%s (%s): %d requests x 3 rounds: original %v CPU, variant %v CPU, ratio %.2f (saving %.0f%%)",
		v.Form, v.Call, n, cpu[0], cpu[1], ratio, 100*(1-ratio))
	if ratio > c.maxRatio {
		t.Errorf("the variant spent %.2f of the original's CPU, want at most %.2f", ratio, c.maxRatio)
	}
}

func start(ctx context.Context, t *testing.T, dir, overlay string) *target.Child {
	t.Helper()
	b, err := Build(ctx, dir, overlay)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Remove)
	ch, err := b.Start(ctx, DefaultRun, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Stop() })
	return ch
}

func get(t *testing.T, client *http.Client, ch *target.Child, path string) string {
	t.Helper()
	resp, body := clitest.Get(t, client, ch.URL+path)
	return fmt.Sprintf("%d %s", resp.StatusCode, body)
}

// calibrate is how many requests make a round of at least 250 ms of the
// original's CPU: enough clock ticks (10 ms each) for a ratio to mean
// something, few enough to keep the test to seconds.
func calibrate(t *testing.T, client *http.Client, ch *target.Child, inputs []string) int {
	for n := 100; ; n *= 2 {
		if round(t, client, ch, inputs, n) >= 250*time.Millisecond || n >= 12800 {
			return n
		}
	}
}

// round sends n requests, cycling through inputs, and is the CPU the
// process spent meanwhile.
func round(t *testing.T, client *http.Client, ch *target.Child, inputs []string, n int) time.Duration {
	t.Helper()
	before := processCPU(t, ch.PID())
	for i := range n {
		get(t, client, ch, inputs[i%len(inputs)])
	}
	return processCPU(t, ch.PID()) - before
}

// processCPU is a process's user and system CPU from /proc (in ticks of
// 1/100 s, Linux's USER_HZ).
func processCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// frameAt is the frame at the line of a test server marked "// hot: mark".
func frameAt(t *testing.T, dir, fn, mark string) verify.Frame {
	t.Helper()
	file, line := testbuild.HotLine(t, dir, mark)
	return verify.Frame{Func: "main." + fn, File: file, Line: line}
}
