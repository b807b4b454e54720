package report

import (
	"regexp"
	"strings"
	"testing"
)

// goldenSeconds gives the golden run a per-second timeline, as a run with
// --during-writes keeps, so that its page draws the seconds.
func goldenSeconds(r *Run) *Run {
	r.Writes = &Writes{Timeline: []SecondReport{{Second: 0, Requests: 70, P50: 40, P99: 95},
		{Second: 1, Requests: 66, Errors: 2, P50: 48, P99: 120, Syncing: true}, {Second: 2, Requests: 64, P50: 52, P99: 99}}}
	return r
}

func TestGoldenRunHTML(t *testing.T) {
	r := goldenSeconds(goldenRun())
	page := r.HTML()
	golden(t, "run.html", page)
	files, err := r.Files()
	if err != nil {
		t.Fatal(err)
	}
	if string(files["report.html"]) != page {
		t.Error("Files has no report.html, or not the page HTML draws")
	}
	// The finding links into flame.html at its own frame; the curve has a
	// point per percentile tick.
	if !strings.Contains(page, `href="flame.html#focus=app.%28%2ASite%29.sitemap"`) {
		t.Errorf("no link to the flame graph focused on app.(*Site).sitemap in:\n%s", page)
	}
	m := regexp.MustCompile(`<svg class="percentiles"[^>]*>.*?<polyline [^>]*points="([^"]*)"`).FindStringSubmatch(page)
	if m == nil || len(strings.Fields(m[1])) < 10 {
		t.Errorf("the percentile curve has too few points: %v", m)
	}
}

func TestRunHTMLWithoutFlameOrSeconds(t *testing.T) {
	r := FromRun(sampleRun("page", 3000, 4000, 5000), Analysis{})
	page := r.HTML()
	if strings.Contains(page, "flame.html") {
		t.Error("a run that was not profiled links to a flame graph")
	}
	if !strings.Contains(page, "No per-second timeline") {
		t.Error("a run without request times does not say why it has no seconds plotted")
	}
}

func TestGoldenSuiteHTML(t *testing.T) {
	s := NewSuite("http://127.0.0.1:1", []*Run{goldenSeconds(goldenRun()), FromRun(sampleRun("page", 3000, 4000, 5000), Analysis{})})
	page := s.HTML()
	golden(t, "suite.html", page)
	files, err := s.Files()
	if err != nil {
		t.Fatal(err)
	}
	if files["report.html"] == nil || files["sitemap/report.html"] == nil || files["page/report.html"] == nil {
		t.Error("the suite's folder lacks its report.html or a run's")
	}
	if !strings.Contains(page, `href="sitemap/flame.html#focus=`) {
		t.Error("the suite's page does not link into the run's own flame graph")
	}
}

func TestNiceCeil(t *testing.T) {
	for v, want := range map[float64]float64{100.02: 120, 100: 100, 0.3: 0.3, 7: 8, 2.2: 2.4, 0.011: 0.012, 0: 1} {
		if got := niceCeil(v); got != want {
			t.Errorf("niceCeil(%g) = %g, want %g", v, got, want)
		}
	}
}
