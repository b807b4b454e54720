package cli

import (
	"context"

	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/report"
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
type start struct {
	// checks are the flag groups' validate() results, in order; the first
	// error is the command's.
	checks []error
	// gates is the family of the --fail-on thresholds of output ("run",
	// "ab"); "" for a command that takes none.
	gates string
	// before is the command's own check of its words and inputs, made
	// after the flags and before anything is claimed (probe compare: a
	// folder compared must not be one --out --force clears).
	before func() error
	// output is the command's output flags: --out is claimed, and finish
	// writes the folder and shows the report (--json: report.json).
	output *outputFlags
	// printOnly: the command writes no folder (probe analyze); finish
	// prints the document alone on stdout, as JSON with output.json.
	printOnly bool
	// load sets the Go runtime's memory limit to what the load may hold.
	load *loadFlags
	// profile loads the analyzers' rules (the catalog and --rules).
	profile *profileFlags
}

// session is one measuring command's run, between begin and finish.
type session struct {
	ctx    context.Context
	s      streams
	st     start
	dir    string          // the claimed report folder; "" when printOnly
	rules  []pipeline.Rule // the rules, when start.profile was given
	gates  []thresholds.Threshold
	broken []string // the lines of the thresholds judged broken
}

// begin validates the flag groups, parses --fail-on, runs the command's
// own checks, claims --out, limits memory and loads the rules, in that
// order, stopping at the first error.
func begin(ctx context.Context, s streams, st start) (*session, error) {
	sess := &session{ctx: ctx, s: s, st: st}
	for _, err := range st.checks {
		if err != nil {
			return nil, err
		}
	}
	if st.gates != "" && st.output != nil {
		gates, err := parseThresholds(st.output.failOn, st.gates)
		if err != nil {
			return nil, err
		}
		sess.gates = gates
	}
	if st.before != nil {
		if err := st.before(); err != nil {
			return nil, err
		}
	}
	if st.output != nil && !st.printOnly {
		dir, err := st.output.claim()
		if err != nil {
			return nil, err
		}
		sess.dir = dir
	}
	if st.load != nil {
		st.load.limitMemory()
	}
	if st.profile != nil {
		rules, err := st.profile.loadRules(ctx)
		if err != nil {
			return nil, err
		}
		sess.rules = rules
	}
	return sess, nil
}

// judgeRuns checks --fail-on on runs: the verdicts for the report; the
// broken ones finish turns into the exit error.
func (sess *session) judgeRuns(runs []*report.RunReport) []report.Threshold {
	verdicts, broken := judgeRuns(sess.gates, runs)
	sess.broken = append(sess.broken, broken...)
	return verdicts
}

// judgeAB is judgeRuns for a comparison (probe ab, probe compare).
func (sess *session) judgeAB(ab *report.AB) []report.Threshold {
	verdicts, broken := judgeAB(sess.gates, ab)
	sess.broken = append(sess.broken, broken...)
	return verdicts
}

// finish writes doc's folder and shows it (the table and where the page
// is, or with --json report.json alone on stdout and the table on
// stderr), then makes the exit error: interrupted (Ctrl-C; exit 130), else
// failure (why the run failed in itself: failed checks, runs that did
// not count; nil when it did not) with the broken thresholds' lines after
// it, else the broken thresholds (exit 1), else nil.
func (sess *session) finish(doc report.Document, failure error) error {
	if sess.st.printOnly {
		if sess.st.output != nil && sess.st.output.json {
			js, err := doc.JSON()
			if err != nil {
				return err
			}
			sess.s.stdout.Write(js)
		} else {
			doc.WriteTable(sess.s.stdout)
		}
		return failure
	}
	if err := writeAndShow(doc, sess.dir, sess.st.output.json, sess.s); err != nil {
		return err
	}
	switch {
	case sess.ctx.Err() != nil:
		return interruptedError{sess.dir}
	case failure != nil && len(sess.broken) > 0:
		return thresholdsBroken{append([]string{failure.Error()}, sess.broken...)}
	case failure != nil:
		return failure
	case len(sess.broken) > 0:
		return thresholdsBroken{sess.broken}
	}
	return nil
}
