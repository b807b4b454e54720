package report

import (
	"bytes"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/probehq/probe/flamegraphs"
	"github.com/probehq/probe/internal/proftest"
)

func chromium(t *testing.T) string {
	for _, b := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(b); err == nil {
			return p
		}
	}
	t.Skip("no Chromium: .ci/run installs Debian's chromium")
	return ""
}

func dumpDOM(t *testing.T, browser, u string) string {
	t.Helper()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-extensions", "--no-first-run", "--virtual-time-budget=5000", "--dump-dom", u}
	out, err := exec.Command(browser, args...).Output()
	if err != nil {
		t.Fatalf("%s --dump-dom %s: %v", browser, u, err)
	}
	return string(out)
}

// TestRunPageInBrowser writes a profiled run's folder, opens report.html
// in headless Chromium, checks its plots were drawn, then follows the
// finding's link and checks the flame graph opened on the finding's frame.
func TestRunPageInBrowser(t *testing.T) {
	browser := chromium(t)
	tree, err := flamegraphs.Fold(proftest.Folded(map[string]int64{
		"main;net/http.(*conn).serve;app.(*Site).ServeHTTP;app.(*Site).sitemap;compress/gzip.(*Writer).Write;compress/flate.(*compressor).deflate": 62,
		"main;net/http.(*conn).serve;app.(*Site).ServeHTTP;app.feedHandler;app.buildItems":                                                         21,
		"main;net/http.(*conn).serve;app.(*Site).ServeHTTP;app.(*Site).page":                                                                       17,
	}), flamegraphs.FoldOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var flame bytes.Buffer
	if err := flamegraphs.WriteHTML(&flame, tree, flamegraphs.Options{Title: "cpu"}); err != nil {
		t.Fatal(err)
	}
	r := goldenSeconds(goldenRun())
	r.files["flame.html"] = flame.Bytes()
	dir := t.TempDir()
	if err := WriteFolder(dir, r); err != nil {
		t.Fatal(err)
	}
	page := "file://" + filepath.Join(dir, "report.html")
	dom := dumpDOM(t, browser, page)

	svgs := regexp.MustCompile(`<svg[ >]`).FindAllString(dom, -1)
	lines := regexp.MustCompile(`<polyline [^>]*points="([^"]+)"`).FindAllStringSubmatch(dom, -1)
	if len(svgs) < 3 || len(lines) < 5 {
		t.Fatalf("report.html drew %d plots with %d lines; want the seconds and the percentile curve:\n%.3000s", len(svgs), len(lines), dom)
	}
	for _, l := range lines {
		if len(strings.Fields(l[1])) < 2 {
			t.Errorf("a line of fewer than two points: %q", l[1])
		}
	}
	link := regexp.MustCompile(`<a class="flame" href="([^"]+)">app\.\(\*Site\)\.sitemap in the flame graph`).FindStringSubmatch(dom)
	if link == nil {
		t.Fatalf("no link from the finding to the flame graph in:\n%.3000s", dom)
	}
	href, err := url.Parse(strings.ReplaceAll(link[1], "&amp;", "&"))
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse(page)
	flameDOM := dumpDOM(t, browser, base.ResolveReference(href).String())
	if !strings.Contains(flameDOM, `data-focus="app.(*Site).sitemap"`) {
		t.Errorf("the flame graph did not open focused on app.(*Site).sitemap:\n%.2000s", flameDOM)
	}
	// The finding's frame holds 62 of 100 sample units: the page marks
	// its share as a search for it would.
	if !strings.Contains(flameDOM, "matched 62.00% of samples") {
		m := regexp.MustCompile(`<span id="matched">[^<]*`).FindString(flameDOM)
		t.Errorf("focused flame graph says %q; want 62.00%% matched", m)
	}
}
