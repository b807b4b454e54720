package rampreport

import (
	"testing"
	"time"

	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/internal/reporttest"
	"github.com/probehq/probe/result"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/stats"
)

// The golden files of probe ramp and probe scale: every format of each,
// from fixed figures like those of a real run.

// goldenRampWindow is a 10-second window at rate sessions a second of
// which failed failed and dropped were not started; the rest took from
// ms to twice ms, their two steps a third and two thirds of that.
func goldenRampWindow(i int, rate float64, ms int64, failed, dropped int64, inFlight, growth, cores float64) result.WindowStats {
	const seconds = 10
	newH := func() *hdrhistogram.Histogram { return hdrhistogram.New(1, int64(5*time.Minute/time.Microsecond), 3) }
	lat, login, list := newH(), newH(), newH()
	started := int64(rate*seconds) - dropped
	ok := started - failed
	for k := range ok {
		us := ms*1000 + ms*1000*k/max(ok, 1)
		lat.RecordValue(us)
		login.RecordValue(us / 3)
		list.RecordValue(2 * us / 3)
	}
	w := result.WindowStats{Window: result.Window{From: time.Duration(i) * seconds * time.Second,
		To: time.Duration(i+1) * seconds * time.Second, Rate: rate},
		Started: started, Dropped: dropped, Failed: failed, Completed: ok, Achieved: float64(ok) / seconds, Latency: lat,
		Steps:        map[string]*hdrhistogram.Histogram{"browse/login": login, "browse/list": list},
		InFlightMean: inFlight, InFlightMax: int(inFlight*1.4) + 1, InFlightGrowth: growth,
		Target: &result.TargetSample{CPUCores: cores, RSS: int64(180+20*i) << 20, Threads: 12 + 2*i, FDs: 30 + int(inFlight),
			Connections: int(inFlight) + 2}}
	if failed > 0 {
		w.Errors = map[string]int64{"timeout": failed * 2 / 3, "check: status 503": failed - failed*2/3}
	}
	return w
}

func goldenRamp() *Ramp {
	run := &result.ArrivalRun{Windows: []result.WindowStats{
		goldenRampWindow(0, 50, 12, 0, 0, 0.9, 0, 0.31),
		goldenRampWindow(1, 100, 13, 0, 0, 1.8, 0.02, 0.62),
		goldenRampWindow(2, 150, 15, 1, 0, 3.1, 0.05, 0.93),
		goldenRampWindow(3, 200, 240, 60, 0, 95, 8.5, 1.0),
		goldenRampWindow(4, 250, 1900, 700, 120, 620, 41, 1.0),
	}, Ended: "stopped: past the knee (windows 4 and 5 did not hold)", Opened: 812,
		Warnings: []result.Warning{{Kind: "rate-not-kept", Message: "window 5: 1880 of 2500 sessions started on time"}}}
	rule := stats.KneeRule{SLO: 500, MaxErrors: 0.01}
	cfg := RampConfig{Target: "http://127.0.0.1:41297", Rule: rule, Cores: 1,
		Schedule: result.Rates{Steps: []float64{50, 100, 150, 200, 250}, Each: 10 * time.Second},
		Flows: []RampFlow{{Name: "browse", Kind: "scenario", Weight: 3, Steps: []string{"browse/login", "browse/list"}},
			{Name: "sitemap", Kind: "microload", Weight: 1, Steps: []string{"sitemap"}}}}
	top := func(gzip float64) []analyzers.ShareOfWork {
		return []analyzers.ShareOfWork{{Work: "repeated-gzip", Share: gzip}, {Work: "template-render", Share: 0.25},
			{Work: "other", Share: 0.75 - gzip}}
	}
	a := RampAnalysis{Knee: stats.FindKnee(LoadSteps(run.Windows), rule),
		Tops:       [][]analyzers.ShareOfWork{top(0.3), top(0.32), top(0.35), top(0.41), top(0.44)},
		WallStates: map[string]float64{"lock": 0.58, "cpu": 0.22, "network": 0.12, "other": 0.08},
		Findings: []analyzers.Finding{{Rule: "contention", Class: "contention", Severity: "high",
			Frames:   []string{"sync.(*Mutex).Lock", "app.(*Cache).get", "app.(*Site).list", "app.(*Site).ServeHTTP"},
			Endpoint: "GET /list", OwnFrame: "app.(*Cache).get", WaitShare: 0.46,
			Evidence:   "requests waited 46% of their time on a lock in app.(*Cache).get (block profile, 38.2s of 83.0s)",
			Suggestion: "Hold the lock for less: copy under it, work outside it, or shard the cache."}}}
	return RampOf(run, cfg, a)
}

func TestGoldenRamp(t *testing.T) {
	reporttest.GoldenFormats(t, "ramp", goldenRamp())
}

// goldenScalePoint is a size of the fixture in per-request mode: load and
// memory grow with the notes, a change re-renders them all, and a page's
// CPU walks them.
func goldenScalePoint(notes int, lost int) ScalePoint {
	n := float64(notes)
	page := ScaleMicroload{CPUPerReqMS: 0.0021 * n, RPS: 950_000 / n,
		Latency: report.Latency{Requests: int64(4_750_000 / n), RPS: 950_000 / n, P50: 0.0075 * n, P95: 0.011 * n, P99: 0.014 * n, Max: 0.03 * n}}
	sitemap := ScaleMicroload{CPUPerReqMS: 0.35 + 0.0001*n, RPS: 2100,
		Latency: report.Latency{Requests: 10_500, RPS: 2100, P50: 3.1, P95: 4.4, P99: 5.9, Max: 12.5}}
	return ScalePoint{Notes: notes, LoadS: 0.2 + 0.0009*n, RSSMB: 40 + 0.021*n, Changes: 3, WriteMS: 1.5 + 0.11*n, Lost: lost,
		FreshMS:    map[string]float64{"page": 2 + 0.11*n, "search": 2.5 + 0.11*n, "sitemap": 2.2 + 0.11*n},
		Microloads: map[string]ScaleMicroload{"page": page, "sitemap": sitemap}}
}

func goldenScale() *Scale {
	s := &Scale{Summary: report.Summary{Microload: "scale", Mode: "closed", Target: "the fixture", Crashes: []report.Crash{},
		Findings: []analyzers.Finding{{Rule: "per-request-full-scan", Class: "load-time", Severity: "high", CPUShare: 0.71,
			Frames: []string{"app.(*Vault).Walk", "app.feedItems", "app.(*Site).page"}, Endpoint: "GET /{note}", OwnFrame: "app.feedItems",
			Evidence: "each request walks all the notes: 71% of the target's CPU; its CPU per request grows linearly with " +
				"the number of notes " +
				"(slope 1.00, 95% interval 0.97 to 1.03)",
			Suggestion: "Build the feed once when the vault changes, not on every request."}},
		Warnings: []result.Warning{{Kind: "failed-requests", Message: "sitemap at 4000 notes: 12 of 9800 requests failed their " +
			"checks: its figures there are those of failing requests"}}},
		Mode: "per-request", Vaults: "realistic", Sizes: []int{500, 1000, 2000, 4000, 8000}}
	for _, n := range []int{500, 1000, 2000, 4000} {
		s.Points = append(s.Points, goldenScalePoint(n, map[bool]int{true: 1, false: 0}[n == 4000]))
	}
	s.Points = append(s.Points, ScalePoint{Notes: 8000, FreshMS: map[string]float64{}, Microloads: map[string]ScaleMicroload{},
		Error: "starting the target: it did not take connections within 5m0s"})
	s.Fit()
	return s
}

func TestGoldenScale(t *testing.T) {
	reporttest.GoldenFormats(t, "scale", goldenScale())
}
