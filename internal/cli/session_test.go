package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/report"
)

// begin stops at the first error in its order: the flag groups, --fail-on,
// the command's own check, then --out; nothing after an error runs.
func TestBeginStopsAtTheFirstError(t *testing.T) {
	var out bytes.Buffer
	s := shared.Streams{Stdout: &out, Stderr: &out}
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	checked := false
	check := func() error { checked = true; return shared.UsageError{Msg: "bad words"} }
	bad := shared.UsageError{Msg: "--concurrency 0: want 1 to 10000"}
	for _, c := range []struct {
		st        shared.Start
		want      string
		wantCheck bool
	}{
		{shared.Start{Checks: []error{nil, bad}, Gates: "run", Output: &shared.OutputFlags{FailOn: []string{"regressed"}}, Before: check},
			"--concurrency 0", false},
		{shared.Start{Gates: "run", Output: &shared.OutputFlags{FailOn: []string{"regressed"}}, Before: check}, "is for probe ab", false},
		{shared.Start{Gates: "ab", Output: &shared.OutputFlags{Out: full, FailOn: []string{"regressed"}}, Before: check}, "bad words", true},
		{shared.Start{Output: &shared.OutputFlags{Out: full}}, "is not empty", false},
	} {
		checked = false
		_, err := shared.Begin(context.Background(), s, c.st)
		var ue shared.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) || checked != c.wantCheck {
			t.Errorf("%+v: %v (checked %v), want %q", c.st, err, checked, c.want)
		}
	}
	// All well: the folder is claimed and the rules are loaded.
	dir := filepath.Join(t.TempDir(), "new")
	sess, err := shared.Begin(context.Background(), s,
		shared.Start{Gates: "run", Output: &shared.OutputFlags{Out: dir, FailOn: []string{"p99_ms>250"}}, Profile: &shared.ProfileFlags{}})
	if err != nil || sess.Dir != dir || len(sess.Rules) == 0 || len(sess.Gates) != 1 {
		t.Fatalf("begin: %v, %+v", err, sess)
	}
}

// finish writes and shows the report, then turns the outcome into the exit
// error: interrupted first, a failure with the broken thresholds after it.
func TestFinishWritesShowsAndJudges(t *testing.T) {
	doc := &report.ProfileFindings{Profiles: []string{"cpu.pb.gz"}}
	mk := func(ctx context.Context, asJSON bool, failOn ...string) (*shared.Session, *bytes.Buffer, *bytes.Buffer) {
		var stdout, stderr bytes.Buffer
		sess, err := shared.Begin(ctx, shared.Streams{Stdout: &stdout, Stderr: &stderr},
			shared.Start{Gates: "run", Output: &shared.OutputFlags{Out: filepath.Join(t.TempDir(), "r"), JSON: asJSON, FailOn: failOn}})
		if err != nil {
			t.Fatal(err)
		}
		return sess, &stdout, &stderr
	}
	sess, stdout, _ := mk(context.Background(), false)
	if err := sess.Finish(doc, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sess.Dir, "report.json")); err != nil || !strings.Contains(stdout.String(),
		"report: "+filepath.Join(sess.Dir, "report.md")) {
		t.Errorf("no folder or no page: %v, %q", err, stdout)
	}
	sess, stdout, stderr := mk(context.Background(), true)
	if err := sess.Finish(doc, nil); err != nil || !strings.HasPrefix(stdout.String(), "{") || stderr.Len() == 0 {
		t.Errorf("--json: %v, stdout %q, stderr %q", err, stdout, stderr)
	}
	// A failure and broken thresholds: one line each, the failure first.
	sess, _, _ = mk(context.Background(), false, "errors>0.1%")
	sess.Broken = []string{"threshold errors>0.1% broken: 5%"}
	err := sess.Finish(doc, errors.New("5 of 100 requests failed their checks"))
	var tb shared.ThresholdsBroken
	if !errors.As(err, &tb) || err.Error() != "5 of 100 requests failed their checks\nthreshold errors>0.1% broken: 5%" {
		t.Errorf("failure and thresholds: %v", err)
	}
	// Ctrl-C: interrupted, whatever else went wrong; the report is written.
	ctx, cancel := context.WithCancel(context.Background())
	sess, _, _ = mk(ctx, false)
	cancel()
	var ie shared.InterruptedError
	if err := sess.Finish(doc, errors.New("failed")); !errors.As(err, &ie) || ie.Dir != sess.Dir {
		t.Errorf("interrupted: %v", err)
	}
	// The caller's deadline ends the run as Ctrl-C does (probe ramp's own
	// schedule ending is not ctx's end: that ramp exits 0).
	ctx, cancel = context.WithTimeout(context.Background(), 0)
	defer cancel()
	sess, _, _ = mk(ctx, false)
	if err := sess.Finish(doc, errors.New("the ramp ended early")); !errors.As(err, &ie) {
		t.Errorf("deadline: %v", err)
	}
	// probe analyze: no folder; the document alone on stdout.
	var out, errOut bytes.Buffer
	sess, err = shared.Begin(context.Background(), shared.Streams{Stdout: &out, Stderr: &errOut}, shared.Start{Output: &shared.OutputFlags{JSON: true}, PrintOnly: true})
	if err != nil || sess.Dir != "" {
		t.Fatalf("printOnly begin: %v, %q", err, sess.Dir)
	}
	if err := sess.Finish(doc, nil); err != nil || !strings.HasPrefix(out.String(), "{") || errOut.Len() != 0 {
		t.Errorf("printOnly --json: %v, %q, %q", err, out.String(), errOut.String())
	}
}
