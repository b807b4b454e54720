package cli

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/report"
)

// compareCommand is `probe compare BEFORE_DIR AFTER_DIR`: the compare step
// of probe ab (pipeline.CompareSides) on two report folders written
// earlier.
func compareCommand(fs *flag.FlagSet) runner {
	var output outputFlags
	output.register(fs, "compare")
	output.registerGates(fs, "regressed, worse, p99_ms:ratio>1.1")
	return func(ctx context.Context, s streams, dirs []string) error {
		sides := [2]map[string][]*report.RunData{{}, {}}
		sess, err := begin(ctx, s, start{gates: "ab", output: &output, before: func() error {
			if len(dirs) != 2 {
				return usageError{"usage: probe compare BEFORE_DIR AFTER_DIR (two report folders of probe <microload> or probe all)"}
			}
			for i, d := range dirs {
				runs, err := report.LoadRuns(d)
				if err != nil {
					return err
				}
				for m, r := range runs {
					sides[i][m] = append(sides[i][m], r)
				}
			}
			// Checked before --out is claimed: --force would clear it.
			for _, d := range dirs {
				if rel, err := filepath.Rel(output.out, d); output.out != "" && err == nil && !strings.HasPrefix(rel, "..") {
					return usageError{fmt.Sprintf("--out %s holds %s, a folder compared: choose another", output.out, d)}
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
		ab.Thresholds = sess.judgeAB(ab)
		return sess.finish(ab, nil)
	}
}
