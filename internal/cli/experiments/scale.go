package experiments

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/probehq/probe/fixtures"
	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/rampreport"
	"github.com/probehq/probe/target"
)

// scale is `probe scale`: the same target at growing sizes of its data,
// seed 002's question of what a change costs and how it grows.
type scale struct {
	load    shared.LoadFlags
	profile shared.ProfileFlags
	output  shared.OutputFlags
	writes  shared.WriteFlags

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

func ScaleCommand(fs *flag.FlagSet) shared.Runner {
	c := &scale{}
	fs.StringVar(&c.sizes, "notes", "500,1000,2000,4000", "the sizes, in notes, increasing: a vault of each is generated")
	shared.RegisterFixtureMode(fs, &c.fixtureMode)
	fs.BoolVar(&c.synthetic, "synthetic", false, "generate 500-byte notes (seed 002's misleading data) instead of realistic ~9 KB ones")
	fs.Uint64Var(&c.seed, "seed", 1, "vault generator seed")
	fs.StringVar(&c.key, "key", "", "the key of the keyed class, for writes (the fixture's: its default)")
	fs.StringVar(&c.cmd, "cmd", "", `a server to start at each size instead of the fixture: {vault} is the data folder, {addr} `+
		`and {port} where to listen`)
	fs.BoolVar(&c.vaultGen, "vault-gen", false, "with --cmd: generate a vault of each --notes size for it")
	fs.Func("vault", "a data folder to serve (repeatable; one a size, its size the Markdown files in it)", func(s string) error {
		c.vaults = append(c.vaults, s)
		return nil
	})
	fs.IntVar(&c.changes, "changes", 3, "notes changed at each size, to time a change and its freshness (0: none)")
	fs.StringVar(&c.syncPath, "sync-path", "", "with --cmd: a path to POST after writing a note into the vault (the server's "+
		"reload); default: writes go through --write-path")
	fs.BoolVar(&c.writeFiles, "write-files", false, "with --cmd: a change is a file written into the data folder (then a POST to "+
		"--sync-path, if given), for a server that reads its files as it serves")
	fs.DurationVar(&c.startTimeout, "start-timeout", 5*time.Minute, "longest wait for the target to load at one size")
	c.load.Register(fs, shared.LoadDefaults{Duration: 5 * time.Second, Warmup: time.Second, Timeout: 30 * time.Second, Concurrency: 8,
		DurationHelp: "measured time per microload at each size", Settle: true})
	c.profile.Register(fs, shared.ProfileOptions{
		Help: "profile each microload at each size; a per-request cost that grows with the data is the " +
			"evidence a full scan needs"})
	c.output.Register(fs, "scale")
	c.writes.Register(fs)
	return c.run
}

// parseSizes reads an increasing list of positive sizes.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || n > 1_000_000 {
			return nil, shared.UsageError{Msg: fmt.Sprintf("--notes %q: want sizes like 500,1000,2000,4000", s)}
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, shared.UsageError{Msg: fmt.Sprintf("--notes %q: the sizes must increase", s)}
		}
		out = append(out, n)
	}
	if len(out) < 2 {
		return nil, shared.UsageError{Msg: fmt.Sprintf("--notes %q: a growth needs two sizes at least (three give it an interval)", s)}
	}
	return out, nil
}

// plan is the sizes to measure, and the server command's words (none for
// the fixture).
func (c *scale) plan() ([]pipeline.ScaleSize, []string, error) {
	if err := shared.ValidFixtureMode(c.fixtureMode); err != nil {
		return nil, nil, err
	}
	var argv []string
	if c.cmd != "" {
		var err error
		if argv, err = shared.CommandWords("cmd", c.cmd); err != nil {
			return nil, nil, err
		}
		if !slices.ContainsFunc(argv, func(w string) bool { return strings.Contains(w, "{vault}") }) {
			return nil, nil, shared.UsageError{Msg: "--cmd must name the data folder with {vault}: the server is started on each size's data"}
		}
		if c.vaultGen == (len(c.vaults) > 0) {
			return nil, nil, shared.UsageError{Msg: "--cmd needs its data: --vault-gen (generated at each --notes size) or --vault DIR for each size"}
		}
	}
	if len(c.vaults) > 0 {
		var out []pipeline.ScaleSize
		for _, d := range c.vaults {
			n, err := countNotes(d)
			if err != nil {
				return nil, nil, shared.UsageError{Msg: fmt.Sprintf("--vault %s: %v", d, err)}
			}
			out = append(out, pipeline.ScaleSize{Notes: n, Dir: d})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Notes < out[j].Notes })
		for i := 1; i < len(out); i++ {
			if out[i].Notes == out[i-1].Notes {
				return nil, nil, shared.UsageError{Msg: fmt.Sprintf("--vault %s and %s hold %d notes each: the sizes must differ", out[i-1].Dir, out[i].Dir,
					out[i].Notes)}
			}
		}
		if len(out) < 2 {
			return nil, nil, shared.UsageError{Msg: "--vault: give two folders at least, of different sizes"}
		}
		return out, argv, nil
	}
	sizes, err := parseSizes(c.sizes)
	if err != nil {
		return nil, nil, err
	}
	out := make([]pipeline.ScaleSize, len(sizes))
	for i, n := range sizes {
		out[i] = pipeline.ScaleSize{Notes: n}
	}
	return out, argv, nil
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

// run is a session (begin … finish): a size that could not be measured,
// or a change that never showed, makes it exit 1 after the report is
// written; Ctrl-C 130.
func (c *scale) run(ctx context.Context, s shared.Streams, names []string) error {
	if len(names) == 0 {
		names = []string{"page", "sitemap"}
	}
	fixture := c.cmd == ""
	var sizes []pipeline.ScaleSize
	var argv []string
	sess, err := shared.Begin(ctx, s, shared.Start{
		Checks: []error{c.load.Validate(), c.profile.Validate()},
		Before: func() (err error) { sizes, argv, err = c.check(names); return err },
		Output: &c.output, Load: &c.load, Profile: &c.profile,
	})
	if err != nil {
		return err
	}
	p := shared.PipelineOf(sess.Rules, shared.NewProgressLine(s.Stderr))
	o := pipeline.ScaleOptions{Sizes: sizes, Microloads: names, Load: c.load.Options(), Synthetic: c.synthetic, Seed: c.seed,
		Changes: c.changes, StartTimeout: c.startTimeout, Settle: c.load.Settle, Target: c.cmd, Vaults: "realistic", Log: s.Stderr,
		Microload: func(name string) (probes.Microload, error) { return shared.NamedMicroload(name, fixture) },
		Measure: func(ctx context.Context, label string, ml probes.Microload, t *probes.Target, o probes.LoadOptions) (*report.Run, error) {
			rep, _, err := p.Measure(ctx, label, ml, t, o)
			return rep, err
		},
		Writes: pipeline.ScaleWrites{Fixture: fixture, Key: c.key, Path: c.writes.Path, Permalink: c.writes.Permalink,
			Freshness: c.writes.Freshness,
			Files:     !fixture && (c.syncPath != "" || c.writeFiles), SyncPath: c.syncPath}}
	if c.profile.Profile {
		o.Profile = func(u *url.URL) *target.ProfileOptions { return c.profile.Options(u, c.load.Duration) }
	}
	switch {
	case len(c.vaults) > 0:
		o.Vaults = "given"
	case c.synthetic:
		o.Vaults = "synthetic"
	}
	if fixture {
		o.Target, o.Mode = "the fixture", c.fixtureMode
		if o.Writes.Key == "" {
			o.Writes.Key = fixtures.DefaultKey
		}
		o.Start = func(ctx context.Context, vault string, notes int) (*target.Child, error) {
			return shared.StartFixture(ctx, shared.FixtureStart{Mode: c.fixtureMode, Notes: notes, Vault: vault, Key: c.key})
		}
	} else {
		o.Start = func(ctx context.Context, vault string, _ int) (*target.Child, error) {
			return shared.StartServer(ctx, argv, "", map[string]string{"{vault}": vault}, target.ChildSpec{Wait: c.startTimeout})
		}
	}
	doc := pipeline.Scale(ctx, o)
	if len(doc.Points) == 0 { // Ctrl-C before the first size
		return errors.New("interrupted before anything was measured")
	}
	return sess.Finish(doc, scaleFailure(doc, c.writes.Freshness, sess.Dir))
}

// check is scale's own check of its flags and microloads: the sizes to
// measure and the server command's words.
func (c *scale) check(names []string) ([]pipeline.ScaleSize, []string, error) {
	if c.changes < 0 || c.changes > 100 {
		return nil, nil, shared.UsageError{Msg: fmt.Sprintf("--changes %d: want 0 to 100", c.changes)}
	}
	sizes, argv, err := c.plan()
	if err != nil {
		return nil, nil, err
	}
	for _, n := range names {
		if _, err := shared.NamedMicroload(n, c.cmd == ""); err != nil {
			return nil, nil, err
		}
	}
	return sizes, argv, nil
}

// scaleFailure is why a scale failed in itself: the first size that could
// not be measured, or that lost changes; nil when none did.
func scaleFailure(doc *rampreport.Scale, freshness time.Duration, dir string) error {
	for _, pt := range doc.Points {
		if pt.Error != "" {
			return fmt.Errorf("%d notes could not be measured (%s); the report keeps the other sizes: %s", pt.Notes, pt.Error,
				filepath.Join(dir, "report.md"))
		}
		if pt.Lost > 0 {
			return fmt.Errorf("at %d notes %d changes never showed within %v (--freshness-timeout): see %s", pt.Notes, pt.Lost, freshness,
				filepath.Join(dir, "report.md"))
		}
	}
	return nil
}
