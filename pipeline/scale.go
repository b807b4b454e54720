package pipeline

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/fixtures/vault"
	"github.com/probehq/probe/lib/foldercopy"
	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/stats"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/rampreport"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

// ScaleSize is one size to measure: its notes, and the folder of its data
// when it is given (else a vault of that many notes is generated).
type ScaleSize struct {
	Notes int
	Dir   string // a --vault folder, copied before the target sees it; "": generate
}

// ScaleOptions are one `probe scale`: the sizes, how to start the target
// on a size's data, and what to measure there.
type ScaleOptions struct {
	Sizes      []ScaleSize
	Microloads []string // measured at each size, in this order
	// Microload is the named microload (checked before the run).
	Microload func(name string) (probes.Microload, error)
	// Start starts the target on the data in dir (notes notes).
	Start func(ctx context.Context, dir string, notes int) (*target.Child, error)
	// Measure loads one microload and analyses it (the command's pipeline).
	Measure func(ctx context.Context, label string, ml probes.Microload, t *probes.Target, o probes.LoadOptions) (*report.Run, error)
	Load    probes.LoadOptions
	// Profile is the profiling of a target at u; nil: none.
	Profile func(u *url.URL) *target.ProfileOptions

	Synthetic bool   // generated vaults have 500-byte notes
	Seed      uint64 // of the generated vaults
	Changes   int    // notes changed and timed at each size, at least
	Writes    ScaleWrites
	// StartTimeout bounds a target's load; a write may sync as long.
	StartTimeout time.Duration
	// Settle bounds the wait for a quiet target before each microload at a
	// size (its idle level taken once it has loaded); 0: no wait.
	Settle time.Duration
	// settler, when set, replaces NewSettler (tests give a fake CPU).
	settler func(t *probes.Target, bound time.Duration) *Settler

	Target, Mode, Vaults string    // as the report names them
	Log                  io.Writer // a line for each step; nil: none
}

// ScaleWrites say how a change is made and seen.
type ScaleWrites struct {
	Fixture   bool   // the target is the fixture: its sitemap and search are watched
	Key       string // the keyed class's key for the writes; "": none
	Path      string // an HTTP write: PUT at Path plus the note's vault path
	Files     bool   // a change is a file written into the size's data folder
	SyncPath  string // with Files: POSTed after the write
	Permalink string
	Freshness time.Duration // longest wait for a change to show
}

// Scale measures each size and fits how each figure grows. A size that
// cannot be measured keeps its error in its point; the run stops early
// when ctx ends.
func Scale(ctx context.Context, o ScaleOptions) *rampreport.Scale {
	if o.Log == nil {
		o.Log = io.Discard
	}
	doc := &rampreport.Scale{Summary: report.Summary{Microload: "scale", Mode: "closed", Target: o.Target, Findings: []analyzers.Finding{},
		Crashes: []report.Crash{}},
		Mode: o.Mode, Vaults: o.Vaults}
	for _, sz := range o.Sizes {
		if ctx.Err() != nil {
			break
		}
		doc.Sizes = append(doc.Sizes, sz.Notes)
		pt := o.measureSize(ctx, sz)
		doc.Points = append(doc.Points, pt)
		for _, name := range o.Microloads {
			if w, ok := SettleWarningBefore(pt.Microloads[name].Settle, fmt.Sprintf("%s at %d notes", name, sz.Notes)); ok {
				doc.Warnings = append(doc.Warnings, w)
			}
			if l := pt.Microloads[name].Latency; l.Errors > 0 {
				doc.Warnings = append(doc.Warnings, result.Warning{Kind: "failed-requests",
					Message: fmt.Sprintf("%s at %d notes: %d of %d requests failed their checks: its figures there are those "+
						"of failing requests",
						name, sz.Notes, l.Errors, l.Requests)})
			}
		}
	}
	if len(doc.Points) == 0 {
		return doc
	}
	doc.Fit()
	scaleFindings(doc)
	if len(doc.Points) < 3 {
		doc.Warnings = append(doc.Warnings, result.Warning{Kind: "few-sizes",
			Message: fmt.Sprintf("%d sizes: each growth is a slope without an interval; three or more give one", len(doc.Points))})
	}
	return doc
}

// measureSize starts the target on one size's data and measures it: load
// time, memory, the cost of a change, and each microload. The data is a
// folder of its own, removed however the size ends: a given vault is
// copied, never changed.
func (o *ScaleOptions) measureSize(ctx context.Context, sz ScaleSize) rampreport.ScalePoint {
	pt := rampreport.ScalePoint{Notes: sz.Notes, FreshMS: map[string]float64{}, Microloads: map[string]rampreport.ScaleMicroload{}}
	fail := func(err error) rampreport.ScalePoint {
		pt.Error = err.Error()
		fmt.Fprintf(o.Log, "probe: %d notes: %v\n", sz.Notes, err)
		return pt
	}
	tmp, err := os.MkdirTemp("", "probe-scale-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	var dir string
	if sz.Dir != "" {
		if dir, err = foldercopy.Copy(sz.Dir, tmp); err != nil {
			return fail(err)
		}
	} else {
		dir = tmp
		fmt.Fprintf(o.Log, "probe: generating %d %s notes…\n", sz.Notes, map[bool]string{true: "synthetic", false: "realistic"}[o.Synthetic])
		if err := vault.Generate(dir, vault.Options{Notes: sz.Notes, Synthetic: o.Synthetic, Seed: o.Seed}); err != nil {
			return fail(err)
		}
	}
	fmt.Fprintf(o.Log, "probe: starting the target on %d notes…\n", sz.Notes)
	start := time.Now()
	child, err := o.Start(ctx, dir, sz.Notes)
	if err != nil {
		return fail(fmt.Errorf("starting the target: %v", err))
	}
	defer child.Stop()
	pt.LoadS = time.Since(start).Seconds()
	// A server that has just loaded still collects its load's garbage:
	// the memory and a change are measured once it is quiet.
	if !target.WaitIdle(child.PID(), 30*time.Second) {
		fmt.Fprintf(o.Log, "probe: %d notes: the target did not go quiet within 30 s after its load; measuring anyway\n", sz.Notes)
	}
	if rss, err := target.RSS(child.PID()); err == nil {
		pt.RSSMB = float64(rss) / (1 << 20)
	}
	u, err := url.Parse(child.URL)
	if err != nil || u.Host == "" {
		return fail(fmt.Errorf("the target's address %q is not a URL", child.URL))
	}
	target := &probes.Target{URL: u, Child: child}
	// The changes' syncs and each microload's abandoned requests may keep
	// the target busy: each microload starts once it is back at the idle
	// level it had after its load.
	var quiet *Settler
	if o.Settle > 0 {
		newSettler := NewSettler
		if o.settler != nil {
			newSettler = o.settler
		}
		quiet = newSettler(target, o.Settle)
		quiet.Baseline(ctx)
	}
	if o.Changes > 0 {
		if err := o.timeChanges(ctx, &pt, target, dir); err != nil {
			return fail(err)
		}
	}
	for i, name := range o.Microloads {
		ml, err := o.Microload(name)
		if err != nil {
			return fail(err)
		}
		lo := o.Load
		if o.Profile != nil {
			lo.Profile = o.Profile(u)
		}
		var settle *report.Settle
		if quiet != nil && (i > 0 || o.Changes > 0) {
			quiet.Busy = func() {
				fmt.Fprintf(o.Log, "probe: %d notes: the target is busy: waiting (up to --settle %s) for it to be quiet before %s…\n", sz.Notes,
					o.Settle, name)
			}
			settle = quiet.Wait(ctx)
		}
		rep, err := o.Measure(ctx, fmt.Sprintf("%s at %d", name, sz.Notes), ml, target, lo)
		if err != nil {
			return fail(fmt.Errorf("%s: %v", name, err))
		}
		m := rampreport.MicroloadAt(rep)
		m.Settle = settle
		pt.Microloads[name] = m
	}
	return pt
}

// Changes that are cheap are timed more often than asked, up to
// scaleMoreChanges in all while they have taken under scaleChangesBudget
// together: a median of three changes of a millisecond each is mostly
// noise, and a growth fitted to it says "unclear" of a cost that does not
// grow.
const (
	scaleMoreChanges   = 30
	scaleChangesBudget = time.Second
)

// timeChanges changes o.Changes notes (or more, when they are cheap), one
// after another, and keeps the medians of their write times and
// freshness.
func (o *ScaleOptions) timeChanges(ctx context.Context, pt *rampreport.ScalePoint, t *probes.Target, dir string) error {
	ws := o.Writes
	var w probes.Writer = probes.HTTPWriter{Path: ws.Path}
	writerTarget := *t
	if ws.Key != "" {
		writerTarget.Header = append(append([]h1.Field{}, t.Header...), h1.Field{Name: "Authorization", Value: "Bearer " + ws.Key})
	}
	if ws.Files {
		w = probes.FileWriter{Dir: dir, SyncPath: ws.SyncPath}
	}
	watch := probes.Watch{Permalink: ws.Permalink, Timeout: ws.Freshness}
	if ws.Fixture {
		watch.Sitemap, watch.SearchPath = "/sitemap.xml", "/search"
	}
	// A write may sync the whole vault before it answers: it gets as long
	// as a load.
	writer := probes.NewClient(&writerTarget, max(o.Load.Timeout, o.StartTimeout))
	defer writer.Close()
	var writes []float64
	var cpu time.Duration // the target's over the writes, when read for each
	cpuReads := 0
	fresh := map[string][]float64{}
	start := time.Now()
	for n := 1; ctx.Err() == nil && (n <= o.Changes || n <= scaleMoreChanges && time.Since(start) < scaleChangesBudget); n++ {
		used := t.Child.CPUFromNow()
		ch := probes.WriteChange(ctx, writer, w, watch, n)
		if ch.Err != "" {
			return fmt.Errorf("writing a note: %s", ch.Err)
		}
		if d, ok := used(); ok {
			cpu, cpuReads = cpu+d, cpuReads+1
		}
		probes.Await(ctx, &ch, t, o.Load.Timeout, watch)
		writes = append(writes, float64(ch.Wrote.Microseconds())/1000)
		for place, d := range ch.Visible {
			fresh[place] = append(fresh[place], float64(d.Microseconds())/1000)
		}
		if len(ch.Lost) > 0 {
			pt.Lost++
		}
		w.Remove(ctx, writer, ch.Path)
	}
	pt.Changes = len(writes)
	pt.WriteMS = stats.Median(writes)
	if cpuReads > 0 && cpuReads == len(writes) {
		mean := float64(cpu.Microseconds()) / 1000 / float64(cpuReads)
		pt.WriteCPUMS = &mean
	}
	for place, v := range fresh {
		pt.FreshMS[place] = stats.Median(v)
	}
	return nil
}

// scaleFindings are the largest size's findings, with the growth of their
// microload's CPU per request as evidence: a full scan's cost grows with
// the data; one that does not grow is no scan of it.
func scaleFindings(doc *rampreport.Scale) {
	last := doc.Points[len(doc.Points)-1]
	names := make([]string, 0, len(last.Microloads))
	for name := range last.Microloads {
		names = append(names, name)
	}
	sort.Strings(names) // the order of findings of equal share
	for _, name := range names {
		m := last.Microloads[name]
		g, ok := doc.GrowthOf("cpu_per_req_ms." + name)
		for _, f := range m.Findings {
			if ok {
				f = analyzers.WithGrowth(f, analyzers.Growth{Slope: g.Slope, Lo: g.Lo, Hi: g.Hi, Shape: g.Shape, Size: "the number of notes"})
			}
			doc.Findings = append(doc.Findings, f)
		}
	}
	sort.SliceStable(doc.Findings, func(i, j int) bool { return doc.Findings[i].CPUShare > doc.Findings[j].CPUShare })
}
