package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// mergeCommand is `probe merge DIR…`: the shards' reports of one run
// (--shard I/N) merged by report.MergeDirs (probe all's, microload by
// microload: report.MergeSuites), written as one run's report and judged
// by --fail-on on the merged figures. Folders that cannot be merged — a
// crafted one among them: a link, a file over its cap, counts that do not
// add up (report/merge.go's bounds) — are a bad command line (exit 2),
// refused before --out is claimed: nothing is written.
func mergeCommand(fs *flag.FlagSet) runner {
	var output outputFlags
	output.register(fs, "merge")
	output.registerGates(fs, "p99_ms>250, errors>0.1%, rps<100")
	allowMissing := fs.Bool("allow-missing", false, "a SHARD_DIR without report.json (its shard never wrote one) "+
		"is a missing shard, merged without and warned shard-missing, not refused: "+
		"a merge that stopped waiting (deploy/kubernetes/merge.yaml)")
	return func(ctx context.Context, s streams, dirs []string) error {
		var run *report.MergedRun
		var suite *report.MergedSuite
		sess, err := begin(ctx, s, start{gates: "run", output: &output, before: func() error {
			if len(dirs) == 0 {
				return usageError{"usage: probe merge SHARD_DIR… (the report folders of probe --shard I/N)"}
			}
			if *allowMissing {
				if dirs = withReport(dirs); len(dirs) == 0 {
					return usageError{"--allow-missing: none of the folders holds a report.json: no shard to merge"}
				}
			}
			for _, d := range dirs {
				// Checked before --out is claimed: --force would clear it.
				if rel, err := filepath.Rel(output.out, d); output.out != "" && err == nil && !strings.HasPrefix(rel, "..") {
					return usageError{fmt.Sprintf("--out %s holds %s, a folder merged: choose another", output.out, d)}
				}
			}
			var err error
			if report.IsSuite(dirs[0]) {
				suite, err = report.MergeSuites(dirs)
			} else {
				run, err = report.MergeDirs(dirs)
			}
			if err != nil {
				return usageError{err.Error()}
			}
			return nil
		}})
		if err != nil {
			return err
		}
		var doc report.Document
		var warnings []probes.Warning
		var failed bool
		var l report.Latency
		var ended string
		if suite != nil {
			suite.Thresholds = sess.judgeRuns(suite.Runs)
			doc, warnings, failed, l, ended = suite, suite.Warnings, suite.Failed(), suite.Latency, suite.Ended
		} else {
			run.Thresholds = sess.judgeRuns([]*report.RunReport{run.RunReport})
			doc, warnings, failed, l, ended = run, run.Warnings, run.Failed(), run.Latency, run.Ended
		}
		for _, w := range warnings {
			if w.Kind == "shard-missing" {
				fmt.Fprintf(s.stderr, "probe: warning: %s\n", w.Message)
			}
		}
		var failure error
		if failed {
			failure = failedChecks{requests: l.Requests, errors: l.Errors, ended: ended, dir: sess.dir}
		}
		return sess.finish(doc, failure)
	}
}

// withReport is the folders that hold a report.json: --allow-missing
// leaves the others out.
func withReport(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if _, err := os.Lstat(filepath.Join(d, "report.json")); !errors.Is(err, fs.ErrNotExist) {
			out = append(out, d)
		}
	}
	return out
}
