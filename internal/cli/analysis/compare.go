package analysis

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/lib/pprofio"
	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes/production"
	"github.com/probehq/probe/report/abreport"
	"github.com/probehq/probe/result"
)

// compareCommand is `probe compare BEFORE_DIR AFTER_DIR`: the compare step
// of probe ab (pipeline.CompareSides) on two report folders written
// earlier. With --from it compares two sides of a fleet's production
// profiles instead (pipeline.CompareProduction): two label selectors
// (--before/--after) or two time ranges (--before-range/--after-range),
// each side fetched as --windows consecutive windows, one by one.
func CompareCommand(fs *flag.FlagSet) shared.Runner {
	var output shared.OutputFlags
	output.Register(fs, "compare")
	output.RegisterGates(fs, "regressed, worse, p99_ms:ratio>1.1")
	var prod shared.ProductionFlags
	prod.Register(fs, "from", "compare a service's production profiles: pyroscope://HOST:PORT or parca://HOST:PORT (+https for TLS)",
		time.Hour, "")
	var sides compareSides
	fs.StringVar(&sides.before[0], "before", "", `with --from: the before side's label selector, e.g. '{version="v41"}'`)
	fs.StringVar(&sides.after[0], "after", "", `with --from: the after side's label selector, e.g. '{version="v42"}'`)
	fs.StringVar(&sides.before[1], "before-range", "", "with --from: the before side's time range START/END (RFC 3339, or "+
		"durations ago: 26h/25h)")
	fs.StringVar(&sides.after[1], "after-range", "", "with --from: the after side's time range START/END")
	fs.IntVar(&sides.windows, "windows", 12, "with --from: consecutive windows a side is fetched in, one by one: the samples of the test")
	var maxProfile shared.ProfileFlags
	maxProfile.RegisterMaxProfile(fs)
	return func(ctx context.Context, s shared.Streams, dirs []string) error {
		if prod.From != "" {
			return compareProduction(ctx, s, &output, &prod, &sides, int64(maxProfile.MaxProfile), dirs)
		}
		sides := [2]map[string][]*abreport.RunData{{}, {}}
		sess, err := shared.Begin(ctx, s, shared.Start{Gates: "ab", Output: &output, Before: func() error {
			if len(dirs) != 2 {
				return shared.UsageError{Msg: "usage: probe compare BEFORE_DIR AFTER_DIR (two report folders of probe <microload> or probe " +
					"all), or probe compare --from pyroscope://HOST:PORT --service NAME --before SELECTOR --after SELECTOR"}
			}
			for i, d := range dirs {
				runs, err := abreport.LoadRuns(d)
				if err != nil {
					return err
				}
				for m, r := range runs {
					sides[i][m] = append(sides[i][m], r)
				}
			}
			// Checked before --out is claimed: --force would clear it.
			for _, d := range dirs {
				if rel, err := filepath.Rel(output.Out, d); output.Out != "" && err == nil && !strings.HasPrefix(rel, "..") {
					return shared.UsageError{Msg: fmt.Sprintf("--out %s holds %s, a folder compared: choose another", output.Out, d)}
				}
			}
			return nil
		}})
		if err != nil {
			return err
		}
		ab := pipeline.CompareSides(dirs[0], dirs[1], sides[0], sides[1], nil)
		if len(ab.Microloads) == 0 {
			return fmt.Errorf("the two folders have no microload in common")
		}
		ab.Thresholds = sess.JudgeAB(ab)
		return sess.Finish(ab, nil)
	}
}

// compareSides are probe compare --from's two sides: a selector and a
// range each.
type compareSides struct {
	before, after [2]string // selector, range
	windows       int
}

// windows are the two sides as the pipeline fetches them, and their names.
func (c *compareSides) windows2(q production.Query) (sides [2]pipeline.Window, names [2]string, err error) {
	now := q.End
	for i, side := range [2][2]string{c.before, c.after} {
		flagName := [2]string{"--before", "--after"}[i]
		w := pipeline.Window{Labels: side[0], Start: q.Start, End: q.End}
		if side[1] != "" {
			if w.Start, w.End, err = shared.ParseRange(flagName+"-range", side[1], now); err != nil {
				return
			}
		}
		names[i] = strings.TrimSpace(strings.Join(nonEmpty(side[0], side[1]), " "))
		if names[i] == "" {
			names[i] = fmt.Sprintf("%s to %s", q.Start.UTC().Format(time.RFC3339), q.End.UTC().Format(time.RFC3339))
		}
		sides[i] = w
	}
	if c.before == c.after {
		return sides, names, shared.UsageError{Msg: "--from: give the sides that differ: --before SELECTOR --after SELECTOR, or " +
			"--before-range START/END --after-range START/END"}
	}
	if c.windows < 2 || c.windows > 1000 {
		return sides, names, shared.UsageError{Msg: fmt.Sprintf("--windows %d: want 2 to 1000", c.windows)}
	}
	return
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// compareProduction is probe compare --from: each side's windows fetched
// before the folder is claimed.
func compareProduction(ctx context.Context, s shared.Streams, output *shared.OutputFlags, prod *shared.ProductionFlags, sides *compareSides,
	maxBytes int64, dirs []string) error {
	var ab *abreport.AB
	sess, err := shared.Begin(ctx, s, shared.Start{Gates: "ab", Output: output, Before: func() error {
		if len(dirs) > 0 {
			return shared.UsageError{Msg: "--from compares the profiler's profiles: name no folder"}
		}
		src, err := prod.Source("from", maxBytes)
		if err != nil {
			return err
		}
		q, err := prod.Query(time.Now())
		if err != nil {
			return err
		}
		if q.Type != "cpu" && q.Type != production.Types[src.Engine]["cpu"] {
			return shared.UsageError{Msg: "--from compares CPU profiles: --type cpu"}
		}
		ws, names, err := sides.windows2(q)
		if err != nil {
			return err
		}
		// Each window is reduced as it comes (pipeline.CompareSide): no
		// window's profile is held beyond its own reading.
		got := [2]*pipeline.CompareSide{pipeline.NewCompareSide(pprofio.MaxEntries(maxBytes)),
			pipeline.NewCompareSide(pprofio.MaxEntries(maxBytes))}
		var warnings []result.Warning
		for i, w := range ws {
			fmt.Fprintf(s.Stderr, "probe: fetching %s in %d windows from %s…\n", names[i], sides.windows, src)
			warn, err := pipeline.FetchWindows(ctx, src, q, w, sides.windows, got[i])
			if err != nil {
				return err
			}
			warnings = append(warnings, warn...)
		}
		ab, err = pipeline.CompareProduction(q.Service, names[0], names[1], got[0], got[1], warnings)
		return err
	}})
	if err != nil {
		return err
	}
	ab.Thresholds = sess.JudgeAB(ab)
	return sess.Finish(ab, nil)
}
