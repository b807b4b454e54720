package shared

import (
	"context"

	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/abreport"
	"github.com/probehq/probe/thresholds"
)

// A measuring command is one session: begin does what every such command
// does before it measures, finish what it does after. Between the two the
// command opens its target and runs the pipeline (pipelineOf).
//
//	sess, err := begin(ctx, s, start{
//		checks:  []error{c.target.validate(), c.load.validate(), c.profile.validate()},
//		gates:   "run",          // --fail-on of a run's figures ("ab": of a comparison)
//		output:  &c.output,      // --out is claimed, --json shows the report
//		load:    &c.load,        // the memory limit of the load
//		profile: &c.profile,     // the rules: the catalog and --rules
//	})
//	if err != nil {
//		return err
//	}
//	… measure with pipelineOf(sess.rules, newProgressLine(s.stderr)), into sess.dir …
//	doc.Thresholds = sess.judgeRuns(reports)
//	return sess.finish(doc, failure) // failure: why the run failed in itself, or nil
//
// A zero field of start skips its step.

// start is what a command's session needs before it measures.
type Start struct {
	// checks are the flag groups' validate() results, in order; the first
	// error is the command's.
	Checks []error
	// gates is the family of the --fail-on thresholds of output ("run",
	// "ab"); "" for a command that takes none.
	Gates string
	// before is the command's own check of its words and inputs, made
	// after the flags and before anything is claimed (probe compare: a
	// folder compared must not be one --out --force clears).
	Before func() error
	// output is the command's output flags: --out is claimed, and finish
	// writes the folder and shows the report (--json: report.json).
	Output *OutputFlags
	// printOnly: the command writes no folder (probe analyze); finish
	// prints the document alone on stdout, as JSON with output.json.
	PrintOnly bool
	// load sets the Go runtime's memory limit to what the load may hold.
	Load *LoadFlags
	// profile loads the analyzers' rules (the catalog and --rules).
	Profile *ProfileFlags
}

// session is one measuring command's run, between begin and finish.
type Session struct {
	ctx    context.Context
	s      Streams
	st     Start
	Dir    string          // the claimed report folder; "" when printOnly
	Rules  []pipeline.Rule // the rules, when start.profile was given
	Gates  []thresholds.Threshold
	Broken []string // the lines of the thresholds judged broken
}

// begin validates the flag groups, parses --fail-on, runs the command's
// own checks, claims --out, limits memory and loads the rules, in that
// order, stopping at the first error.
func Begin(ctx context.Context, s Streams, st Start) (*Session, error) {
	sess := &Session{ctx: ctx, s: s, st: st}
	for _, err := range st.Checks {
		if err != nil {
			return nil, err
		}
	}
	if st.Gates != "" && st.Output != nil {
		gates, err := ParseThresholds(st.Output.FailOn, st.Gates)
		if err != nil {
			return nil, err
		}
		sess.Gates = gates
	}
	if st.Before != nil {
		if err := st.Before(); err != nil {
			return nil, err
		}
	}
	if st.Output != nil && !st.PrintOnly {
		dir, err := st.Output.claim()
		if err != nil {
			return nil, err
		}
		sess.Dir = dir
	}
	if st.Load != nil {
		st.Load.limitMemory()
	}
	if st.Profile != nil {
		rules, err := st.Profile.loadRules(ctx)
		if err != nil {
			return nil, err
		}
		sess.Rules = rules
	}
	return sess, nil
}

// judgeRuns checks --fail-on on runs: the verdicts for the report; the
// broken ones finish turns into the exit error.
func (sess *Session) JudgeRuns(runs []*report.Run) []report.Threshold {
	verdicts, broken := judgeRuns(sess.Gates, runs)
	sess.Broken = append(sess.Broken, broken...)
	return verdicts
}

// judgeAB is judgeRuns for a comparison (probe ab, probe compare).
func (sess *Session) JudgeAB(ab *abreport.AB) []report.Threshold {
	verdicts, broken := judgeAB(sess.Gates, ab)
	sess.Broken = append(sess.Broken, broken...)
	return verdicts
}

// finish writes doc's folder and shows it (the table and where the page
// is, or with --json report.json alone on stdout and the table on
// stderr), then makes the exit error: interrupted (Ctrl-C; exit 130), else
// failure (why the run failed in itself: failed checks, runs that did
// not count; nil when it did not) with the broken thresholds' lines after
// it, else the broken thresholds (exit 1), else nil.
func (sess *Session) Finish(doc report.Document, failure error) error {
	if sess.st.PrintOnly {
		doc, err := report.Bounded(doc)
		if err != nil {
			return err
		}
		if sess.st.Output != nil && sess.st.Output.JSON {
			js, err := doc.JSON()
			if err != nil {
				return err
			}
			sess.s.Stdout.Write(js)
		} else {
			doc.WriteTable(sess.s.Stdout)
		}
		return failure
	}
	if err := writeAndShow(doc, sess.Dir, sess.st.Output.JSON, sess.s); err != nil {
		return err
	}
	switch {
	case sess.ctx.Err() != nil:
		return InterruptedError{sess.Dir}
	case failure != nil && len(sess.Broken) > 0:
		return ThresholdsBroken{append([]string{failure.Error()}, sess.Broken...)}
	case failure != nil:
		return failure
	case len(sess.Broken) > 0:
		return ThresholdsBroken{sess.Broken}
	}
	return nil
}
