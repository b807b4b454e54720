package cli

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/probehq/probe/report"
)

// mergeCommand is `probe merge DIR…`: the shards' reports of one run
// (--shard I/N) merged by report.MergeShards, written as one run's report
// and judged by --fail-on on the merged figures. Folders that cannot be
// merged are a bad command line (exit 2): nothing is written.
func mergeCommand(fs *flag.FlagSet) runner {
	var output outputFlags
	output.register(fs, "merge")
	output.registerGates(fs, "p99_ms>250, errors>0.1%, rps<100")
	return func(ctx context.Context, s streams, dirs []string) error {
		var merged *report.MergedRun
		sess, err := begin(ctx, s, start{gates: "run", output: &output, before: func() error {
			if len(dirs) == 0 {
				return usageError{"usage: probe merge SHARD_DIR… (the report folders of probe --shard I/N)"}
			}
			var shards []*report.ShardRun
			for _, d := range dirs {
				// Checked before --out is claimed: --force would clear it.
				if rel, err := filepath.Rel(output.out, d); output.out != "" && err == nil && !strings.HasPrefix(rel, "..") {
					return usageError{fmt.Sprintf("--out %s holds %s, a folder merged: choose another", output.out, d)}
				}
				sh, err := report.ReadShard(d)
				if err != nil {
					return usageError{err.Error()}
				}
				shards = append(shards, sh)
			}
			var err error
			if merged, err = report.MergeShards(shards); err != nil {
				return usageError{err.Error()}
			}
			return nil
		}})
		if err != nil {
			return err
		}
		for _, w := range merged.Warnings {
			if w.Kind == "shard-missing" {
				fmt.Fprintf(s.stderr, "probe: warning: %s\n", w.Message)
			}
		}
		merged.Thresholds = sess.judgeRuns([]*report.RunReport{merged.RunReport})
		var failure error
		if merged.Failed() {
			l := merged.Latency
			failure = failedChecks{requests: l.Requests, errors: l.Errors, ended: merged.Ended, dir: sess.dir}
		}
		return sess.finish(merged, failure)
	}
}
