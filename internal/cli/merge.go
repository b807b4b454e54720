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

	"github.com/probehq/probe/internal/cli/loads"
	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/shardreport"
	"github.com/probehq/probe/result"
)

// mergeCommand is `probe merge DIR…`: the shards' reports of one run
// (--shard I/N) merged by shardreport.MergeDirs (probe all's, microload by
// microload: shardreport.MergeSuites), written as one run's report and judged
// by --fail-on on the merged figures. Folders that cannot be merged — a
// crafted one among them: a link, a file over its cap, counts that do not
// add up (report/shardreport/merge.go's bounds) — are a bad command line (exit 2),
// refused before --out is claimed: nothing is written.
func mergeCommand(fs *flag.FlagSet) shared.Runner {
	var output shared.OutputFlags
	output.Register(fs, "merge")
	output.RegisterGates(fs, "p99_ms>250, errors>0.1%, rps<100")
	allowMissing := fs.Bool("allow-missing", false, "a SHARD_DIR without report.json (its shard never wrote one) "+
		"is a missing shard, merged without and warned shard-missing, not refused: "+
		"a merge that stopped waiting (deploy/kubernetes/merge.yaml)")
	return func(ctx context.Context, s shared.Streams, dirs []string) error {
		var run *shardreport.MergedRun
		var suite *shardreport.MergedSuite
		sess, err := shared.Begin(ctx, s, shared.Start{Gates: "run", Output: &output, Before: func() error {
			if len(dirs) == 0 {
				return shared.UsageError{Msg: "usage: probe merge SHARD_DIR… (the report folders of probe --shard I/N)"}
			}
			if *allowMissing {
				if dirs = withReport(dirs); len(dirs) == 0 {
					return shared.UsageError{Msg: "--allow-missing: none of the folders holds a report.json: no shard to merge"}
				}
			}
			for _, d := range dirs {
				// Checked before --out is claimed: --force would clear it.
				if rel, err := filepath.Rel(output.Out, d); output.Out != "" && err == nil && !strings.HasPrefix(rel, "..") {
					return shared.UsageError{Msg: fmt.Sprintf("--out %s holds %s, a folder merged: choose another", output.Out, d)}
				}
			}
			var err error
			if shardreport.IsSuite(dirs[0]) {
				suite, err = shardreport.MergeSuites(dirs)
			} else {
				run, err = shardreport.MergeDirs(dirs)
			}
			if err != nil {
				return shared.UsageError{Msg: err.Error()}
			}
			return nil
		}})
		if err != nil {
			return err
		}
		var doc report.Document
		var warnings []result.Warning
		var failed bool
		var l report.Latency
		var ended string
		if suite != nil {
			suite.Thresholds = sess.JudgeRuns(suite.Runs)
			doc, warnings, failed, l, ended = suite, suite.Warnings, suite.Failed(), suite.Latency, suite.Ended
		} else {
			run.Thresholds = sess.JudgeRuns([]*report.Run{run.Run})
			doc, warnings, failed, l, ended = run, run.Warnings, run.Failed(), run.Latency, run.Ended
		}
		for _, w := range warnings {
			if w.Kind == "shard-missing" {
				fmt.Fprintf(s.Stderr, "probe: warning: %s\n", w.Message)
			}
		}
		var failure error
		if failed {
			failure = loads.FailedChecks{Requests: l.Requests, Errors: l.Errors, Ended: ended, Dir: sess.Dir}
		}
		return sess.Finish(doc, failure)
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
