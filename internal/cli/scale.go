package cli

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/fixtures"
	"github.com/probehq/probe/fixtures/vault"
	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// scale is `probe scale`: the same target at growing sizes of its data,
// seed 002's question of what a change costs and how it grows.
type scale struct {
	load    loadFlags
	profile profileFlags
	output  outputFlags
	writes  writeFlags

	sizes        string
	fixtureMode  string
	synthetic    bool
	seed         uint64
	key          string
	cmd          string
	vaultGen     bool
	vaults       []string
	changes      int
	syncPath     string
	writeFiles   bool
	startTimeout time.Duration
}

func scaleCommand(fs *flag.FlagSet) runner {
	c := &scale{}
	fs.StringVar(&c.sizes, "notes", "500,1000,2000,4000", "the sizes, in notes, increasing: a vault of each is generated")
	fs.StringVar(&c.fixtureMode, "fixture-mode", "per-request", "mode of the fixture: per-request or load-time")
	fs.BoolVar(&c.synthetic, "synthetic", false, "generate 500-byte notes (seed 002's misleading data) instead of realistic ~9 KB ones")
	fs.Uint64Var(&c.seed, "seed", 1, "vault generator seed")
	fs.StringVar(&c.key, "key", "", "the key of the keyed class, for writes (the fixture's: its default)")
	fs.StringVar(&c.cmd, "cmd", "", `a server to start at each size instead of the fixture: {vault} is the data folder, {addr} and {port} where to listen`)
	fs.BoolVar(&c.vaultGen, "vault-gen", false, "with --cmd: generate a vault of each --notes size for it")
	fs.Func("vault", "a data folder to serve (repeatable; one a size, its size the Markdown files in it)", func(s string) error {
		c.vaults = append(c.vaults, s)
		return nil
	})
	fs.IntVar(&c.changes, "changes", 3, "notes changed at each size, to time a change and its freshness (0: none)")
	fs.StringVar(&c.syncPath, "sync-path", "", "with --cmd: a path to POST after writing a note into the vault (the server's reload); default: writes go through --write-path")
	fs.BoolVar(&c.writeFiles, "write-files", false, "with --cmd: a change is a file written into the data folder (then a POST to --sync-path, if given), for a server that reads its files as it serves")
	fs.DurationVar(&c.startTimeout, "start-timeout", 5*time.Minute, "longest wait for the target to load at one size")
	c.load.register(fs, loadDefaults{duration: 5 * time.Second, warmup: time.Second, timeout: 30 * time.Second, concurrency: 8,
		durationHelp: "measured time per microload at each size"})
	c.profile.register(fs, false, "profile each microload at each size; a per-request cost that grows with the data is the evidence a full scan needs")
	c.output.register(fs, "scale")
	c.writes.register(fs)
	return c.run
}

// parseSizes reads an increasing list of positive sizes.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || n > 1_000_000 {
			return nil, usageError{fmt.Sprintf("--notes %q: want sizes like 500,1000,2000,4000", s)}
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, usageError{fmt.Sprintf("--notes %q: the sizes must increase", s)}
		}
		out = append(out, n)
	}
	if len(out) < 2 {
		return nil, usageError{fmt.Sprintf("--notes %q: a growth needs two sizes at least (three give it an interval)", s)}
	}
	return out, nil
}

// size is one size to measure: its notes and where its data is.
type size struct {
	notes int
	dir   string // a vault folder; "" until generated
	given bool   // a --vault folder, not to be removed
}

func (c *scale) plan() ([]size, error) {
	if c.fixtureMode != "per-request" && c.fixtureMode != "load-time" {
		return nil, usageError{fmt.Sprintf("--fixture-mode %q: want per-request or load-time", c.fixtureMode)}
	}
	if c.cmd != "" {
		if !strings.Contains(c.cmd, "{vault}") {
			return nil, usageError{"--cmd must name the data folder with {vault}: the server is started on each size's data"}
		}
		if c.vaultGen == (len(c.vaults) > 0) {
			return nil, usageError{"--cmd needs its data: --vault-gen (generated at each --notes size) or --vault DIR for each size"}
		}
	}
	if len(c.vaults) > 0 {
		var out []size
		for _, d := range c.vaults {
			n, err := countNotes(d)
			if err != nil {
				return nil, usageError{fmt.Sprintf("--vault %s: %v", d, err)}
			}
			out = append(out, size{notes: n, dir: d, given: true})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].notes < out[j].notes })
		for i := 1; i < len(out); i++ {
			if out[i].notes == out[i-1].notes {
				return nil, usageError{fmt.Sprintf("--vault %s and %s hold %d notes each: the sizes must differ", out[i-1].dir, out[i].dir, out[i].notes)}
			}
		}
		if len(out) < 2 {
			return nil, usageError{"--vault: give two folders at least, of different sizes"}
		}
		return out, nil
	}
	sizes, err := parseSizes(c.sizes)
	if err != nil {
		return nil, err
	}
	out := make([]size, len(sizes))
	for i, n := range sizes {
		out[i] = size{notes: n}
	}
	return out, nil
}

// countNotes counts the Markdown files under dir.
func countNotes(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			n++
		}
		return nil
	})
	if err == nil && n == 0 {
		err = fmt.Errorf("no Markdown notes in it")
	}
	return n, err
}

func (c *scale) run(ctx context.Context, s streams, names []string) error {
	for _, err := range []error{c.load.validate(), c.profile.validate()} {
		if err != nil {
			return err
		}
	}
	if c.changes < 0 || c.changes > 100 {
		return usageError{fmt.Sprintf("--changes %d: want 0 to 100", c.changes)}
	}
	sizes, err := c.plan()
	if err != nil {
		return err
	}
	if len(names) == 0 {
		names = []string{"page", "sitemap"}
	}
	fixture := c.cmd == ""
	for _, n := range names {
		if _, err := namedMicroload(n, fixture); err != nil {
			return err
		}
	}
	dir, err := c.output.claim()
	if err != nil {
		return err
	}
	c.load.limitMemory()
	rules, err := c.profile.loadRules(ctx)
	if err != nil {
		return err
	}
	doc := &report.Scale{Summary: report.Summary{Microload: "scale", Mode: "closed", Findings: []analyzers.Finding{}, Crashes: []report.Crash{}},
		Vaults: "realistic"}
	switch {
	case len(c.vaults) > 0:
		doc.Vaults = "given"
	case c.synthetic:
		doc.Vaults = "synthetic"
	}
	if fixture {
		doc.Target, doc.Mode = "the fixture", c.fixtureMode
	} else {
		doc.Target = c.cmd
	}
	p := newPipeline(rules, newProgressLine(s.stderr))
	for _, sz := range sizes {
		if ctx.Err() != nil {
			break
		}
		doc.Sizes = append(doc.Sizes, sz.notes)
		pt := c.measureSize(ctx, sz, names, fixture, p, s)
		doc.Points = append(doc.Points, pt)
		for _, name := range names {
			if l := pt.Microloads[name].Latency; l.Errors > 0 {
				doc.Warnings = append(doc.Warnings, probes.Warning{Kind: "failed-requests",
					Message: fmt.Sprintf("%s at %d notes: %d of %d requests failed their checks: its figures there are those of failing requests", name, sz.notes, l.Errors, l.Requests)})
			}
		}
	}
	if len(doc.Points) == 0 {
		return interruptedError{dir}
	}
	doc.Fit()
	c.findings(doc)
	if len(doc.Points) < 3 {
		doc.Warnings = append(doc.Warnings, probes.Warning{Kind: "few-sizes", Message: fmt.Sprintf("%d sizes: each growth is a slope without an interval; three or more give one", len(doc.Points))})
	}
	if err := writeAndShow(doc, dir, c.output.json, s); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return interruptedError{dir}
	}
	for _, pt := range doc.Points {
		if pt.Error != "" {
			return fmt.Errorf("%d notes could not be measured (%s); the report keeps the other sizes: %s", pt.Notes, pt.Error, filepath.Join(dir, "report.md"))
		}
		if pt.Lost > 0 {
			return fmt.Errorf("at %d notes %d changes never showed within %v (--freshness-timeout): see %s", pt.Notes, pt.Lost, c.writes.freshness, filepath.Join(dir, "report.md"))
		}
	}
	return nil
}

// measureSize starts the target on one size's data and measures it: load
// time, memory, the cost of a change, and each microload.
func (c *scale) measureSize(ctx context.Context, sz size, names []string, fixture bool, p *pipeline, s streams) report.ScalePoint {
	pt := report.ScalePoint{Notes: sz.notes, FreshMS: map[string]float64{}, Microloads: map[string]report.ScaleMicroload{}}
	fail := func(err error) report.ScalePoint {
		pt.Error = err.Error()
		fmt.Fprintf(s.stderr, "probe: %d notes: %v\n", sz.notes, err)
		return pt
	}
	if sz.dir == "" {
		tmp, err := os.MkdirTemp("", "probe-scale-")
		if err != nil {
			return fail(err)
		}
		defer os.RemoveAll(tmp)
		fmt.Fprintf(s.stderr, "probe: generating %d %s notes…\n", sz.notes, map[bool]string{true: "synthetic", false: "realistic"}[c.synthetic])
		if err := vault.Generate(tmp, vault.Options{Notes: sz.notes, Synthetic: c.synthetic, Seed: c.seed}); err != nil {
			return fail(err)
		}
		sz.dir = tmp
	}
	fmt.Fprintf(s.stderr, "probe: starting the target on %d notes…\n", sz.notes)
	start := time.Now()
	var child *probes.Child
	var err error
	if fixture {
		child, err = startFixture(ctx, fixtureStart{mode: c.fixtureMode, notes: sz.notes, vault: sz.dir, key: c.key})
	} else {
		var argv []string
		if argv, err = commandWords("cmd", strings.ReplaceAll(c.cmd, "{vault}", sz.dir)); err == nil {
			child, err = startCommand(ctx, argv, "", probes.ChildSpec{Wait: c.startTimeout})
		}
	}
	if err != nil {
		return fail(fmt.Errorf("starting the target: %v", err))
	}
	defer child.Stop()
	pt.LoadS = time.Since(start).Seconds()
	// A server that has just loaded still collects its load's garbage:
	// the memory and a change are measured once it is quiet.
	if !probes.WaitIdle(child.PID(), 30*time.Second) {
		fmt.Fprintf(s.stderr, "probe: %d notes: the target did not go quiet within 30 s after its load; measuring anyway\n", sz.notes)
	}
	if rss, err := probes.RSS(child.PID()); err == nil {
		pt.RSSMB = float64(rss) / (1 << 20)
	}
	u, err := parseTarget(child.URL)
	if err != nil {
		return fail(err)
	}
	target := &probes.Target{URL: u, Child: child}
	if c.changes > 0 {
		if err := c.timeChanges(ctx, &pt, target, sz.dir, fixture); err != nil {
			return fail(err)
		}
	}
	for _, name := range names {
		ml, _ := namedMicroload(name, fixture) // checked before the run
		rep, _, err := p.measure(ctx, fmt.Sprintf("%s at %d", name, sz.notes), ml, target, c.loadOptions(target))
		if err != nil {
			return fail(fmt.Errorf("%s: %v", name, err))
		}
		pt.Microloads[name] = report.MicroloadAt(rep)
	}
	return pt
}

func (c *scale) loadOptions(t *probes.Target) probes.LoadOptions {
	o := c.load.options()
	o.Profile = c.profile.options(t.URL, c.load.duration)
	return o
}

// Changes that are cheap are timed more often than --changes asks, up to
// moreChanges in all while they have taken under changesBudget together:
// a median of three changes of a millisecond each is mostly noise, and a
// growth fitted to it says "unclear" of a cost that does not grow.
const (
	moreChanges   = 30
	changesBudget = time.Second
)

// timeChanges changes c.changes notes (or more, when they are cheap), one
// after another, and keeps the medians of their write times and
// freshness.
func (c *scale) timeChanges(ctx context.Context, pt *report.ScalePoint, t *probes.Target, dir string, fixture bool) error {
	var w probes.Writer = probes.HTTPWriter{Path: c.writes.path}
	writerTarget := *t
	if fixture || c.key != "" {
		key := c.key
		if key == "" {
			key = fixtures.DefaultKey
		}
		writerTarget.Header = append(append([]h1.Field{}, t.Header...), h1.Field{Name: "Authorization", Value: "Bearer " + key})
	}
	if !fixture && (c.syncPath != "" || c.writeFiles) {
		w = probes.FileWriter{Dir: dir, SyncPath: c.syncPath}
	}
	watch := probes.Watch{Permalink: c.writes.permalink, Timeout: c.writes.freshness}
	if fixture {
		watch.Sitemap, watch.SearchPath = "/sitemap.xml", "/search"
	}
	// A write may sync the whole vault before it answers: it gets as long
	// as a load.
	writer := probes.NewClient(&writerTarget, max(c.load.timeout, c.startTimeout))
	defer writer.Close()
	var writes []float64
	fresh := map[string][]float64{}
	start := time.Now()
	for n := 1; ctx.Err() == nil && (n <= c.changes || n <= moreChanges && time.Since(start) < changesBudget); n++ {
		ch := probes.ChangeNote(ctx, writer, t, c.load.timeout, w, watch, n)
		if ch.Err != "" {
			return fmt.Errorf("writing a note: %s", ch.Err)
		}
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
	pt.WriteMS = median(writes)
	for place, v := range fresh {
		pt.FreshMS[place] = median(v)
	}
	return nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// findings are the largest size's findings, with the growth of their
// microload's CPU per request as evidence: a full scan's cost grows with
// the data; one that does not grow is no scan of it.
func (c *scale) findings(doc *report.Scale) {
	last := doc.Points[len(doc.Points)-1]
	for name, m := range last.Microloads {
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
