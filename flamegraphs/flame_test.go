package flamegraphs

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/probehq/probe/internal/proftest"
)

func TestFoldMergesAndAddsUp(t *testing.T) {
	p := proftest.Folded(map[string]int64{"main;serve;gzip": 5, "main;serve;json": 3, "main;other": 2})
	again := *p.Sample[0] // an identical stack again, in its own sample
	for _, s := range p.Sample {
		if len(s.Location) == 3 && s.Location[0].Line[0].Function.Name == "gzip" {
			again = *s
		}
	}
	again.Value = []int64{1, 4}
	p.Sample = append(p.Sample, &again)
	tr, err := Fold(p, FoldOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Root.Total != 14 || len(tr.Root.Children) != 1 {
		t.Fatalf("root %d with %d children", tr.Root.Total, len(tr.Root.Children))
	}
	tr.Root.Walk(func(n *Node, _ int) {
		sum := n.Self
		for _, c := range n.Children {
			sum += c.Total
		}
		if sum != n.Total {
			t.Errorf("%s: self %d + children = %d, total %d", n.Name, n.Self, sum, n.Total)
		}
	})
	serve := tr.Root.Children[0].Children[1]
	if serve.Name != "serve" || serve.Total != 12 || serve.Children[0].Name != "gzip" || serve.Children[0].Total != 9 {
		t.Errorf("serve %+v", serve)
	}
	focused, _ := Fold(p, FoldOptions{SampleIndex: "cpu", Focus: regexp.MustCompile("json")})
	if focused.Root.Total != 3 {
		t.Errorf("focus on json: %d", focused.Root.Total)
	}
	if _, err := Fold(p, FoldOptions{SampleIndex: "alloc_space"}); err == nil || !strings.Contains(err.Error(), "valid: samples, cpu") {
		t.Errorf("unknown index: %v", err)
	}
}

func TestDiffIsNormalised(t *testing.T) {
	before := proftest.Folded(map[string]int64{"main;gzip": 80, "main;json": 20})
	after := proftest.Folded(map[string]int64{"main;gzip": 10, "main;json": 40, "main;new": 50}) // twice the samples
	tr, err := FoldDiff(before, after, FoldOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*Node{}
	tr.Root.Walk(func(n *Node, _ int) { got[n.Name] = n })
	// Base is scaled by 100/100: shares, not load.
	if math.Abs(got["gzip"].Base-80) > 1e-9 || got["gzip"].Total != 10 || got["new"].Base != 0 || math.Abs(got["all"].Base-100) > 1e-9 {
		t.Errorf("gzip %+v, new %+v", got["gzip"], got["new"])
	}
	if c := diffColour(float64(got["gzip"].Total), got["gzip"].Base); !strings.HasPrefix(c, "hsl(220") {
		t.Errorf("shrunk frame coloured %s", c)
	}
	if c := diffColour(float64(got["new"].Total), got["new"].Base); !strings.HasPrefix(c, "hsl(0,80%") {
		t.Errorf("grown frame coloured %s", c)
	}
	bigger := proftest.Folded(map[string]int64{"main;gzip": 20, "main;json": 80, "main;new": 100})
	if tr2, _ := FoldDiff(before, bigger, FoldOptions{}); math.Abs(tr2.Root.Base-200) > 1e-9 {
		t.Errorf("base total scaled to %v, want 200", tr2.Root.Base)
	}
}

func TestSVGLayoutAndEscaping(t *testing.T) {
	p := proftest.Folded(map[string]int64{"main;pkg.F[go.shape.int];a<b>&c": 6, "main;pkg.(*T).func1": 4})
	tr, _ := Fold(p, FoldOptions{})
	var b bytes.Buffer
	if err := WriteSVG(&b, tr, Options{Title: "t <1>", Width: 1020}); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if strings.Contains(svg, "a<b>") || !strings.Contains(svg, "a&lt;b&gt;&amp;c") || !strings.Contains(svg, "pkg.F[go.shape.int]") {
		t.Errorf("names not escaped:\n%s", svg)
	}
	// Widths: the root spans 1000 px; its children split it 60/40.
	widths := regexp.MustCompile(`<rect x="([0-9.]+)" y="\d+" width="([0-9.]+)"`).FindAllStringSubmatch(svg, -1)
	if len(widths) < 4 || widths[1][2] != "1000.0" {
		t.Fatalf("rects %v", widths)
	}
	if widths[2][2] != "400.0" || widths[2][1] != "10.0" || !strings.Contains(svg, `width="600.0"`) {
		t.Errorf("children %v", widths[2:])
	}
	if got := elide("github.com/some/very/long/package.Function", 100); got != "github.com/s…" {
		t.Errorf("elided %q", got)
	}
}

func TestHTMLInABrowser(t *testing.T) {
	browser := ""
	for _, b := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(b); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no Chromium: .ci/run installs Debian's chromium")
	}
	stacks := map[string]int64{}
	for i := range 300 {
		stacks[fmt.Sprintf("main;net/http.(*conn).serve;app.handler%d;app.(*snapshot).walkFeeds;runtime.mapassign", i%7)] += 3
		stacks[fmt.Sprintf("main;net/http.(*conn).serve;app.handler%d;compress/flate.deflate;x<&>%d", i%7, i)] += 2
	}
	tr, _ := Fold(proftest.Folded(stacks), FoldOptions{})
	dir := t.TempDir()
	page := filepath.Join(dir, "flame.html")
	var b bytes.Buffer
	if err := WriteHTML(&b, tr, Options{Title: "browser test", Highlight: map[string]bool{"app.(*snapshot).walkFeeds": true}}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(page, b.Bytes(), 0o644)
	url := "file://" + page + "#selftest=walkFeeds"
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000"}
	out, err := exec.Command(browser, append(args, "--dump-dom", url)...).Output()
	if err != nil {
		t.Fatalf("%s: %v", browser, err)
	}
	m := regexp.MustCompile(`frames=(\d+) matches=(\d+) share=([0-9.]+) sandwich=(\w+) errors=(\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("the page did not run its self-test:\n%.2000s", out)
	}
	// walkFeeds carries 3 of every 5 sample units.
	if string(m[4]) != "true" || string(m[5]) != "0" {
		t.Errorf("sandwich view shown: %s, script errors: %s", m[4], m[5])
	}
	if string(m[2]) != "7" || string(m[3]) != "60.00" || string(m[1]) == "0" {
		t.Errorf("self-test: frames %s, matches %s, share %s; want 7 matches, 60.00%%", m[1], m[2], m[3])
	}
	shots := os.Getenv("PROBE_ARTIFACTS")
	if shots == "" {
		shots = filepath.Join(os.TempDir(), "probe-artifacts")
	}
	os.MkdirAll(shots, 0o755)
	shot := filepath.Join(shots, "flame-browser-test.png")
	if err := exec.Command(browser, append(args, "--window-size=1400,900", "--screenshot="+shot, url)...).Run(); err != nil {
		t.Errorf("screenshot: %v", err)
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Errorf("screenshot %s: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
}
