package loads

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/internal/cli/srctarget"
	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/pipeline/verification"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
	"github.com/probehq/probe/verify"
)

// srcFlags are --src and how its build is started: the target is the
// user's own source, built and started by probe.
type srcFlags struct {
	Dir          string
	Run          string
	StartTimeout time.Duration
	Verify       bool
	runGiven     bool

	bin *srctarget.Binary // the source as it is, once built
}

func (f *srcFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.Dir, "src", "", "build the main package in DIR with the go command and load it as the target "+
		"(instead of --target)")
	fs.Func("run", "with --src: the command that starts the built binary ({out}, {addr}, {port}; PORT and ADDR "+
		"are set) (default \""+srctarget.DefaultRun+"\")", func(s string) error {
		f.Run, f.runGiven = s, true
		return nil
	})
	fs.DurationVar(&f.StartTimeout, "start-timeout", time.Minute, "with --src: longest wait for the built binary to listen")
	fs.BoolVar(&f.Verify, "verify", false, "with --src and --profile: rewrite each load-time or cacheable finding's hot call "+
		"to run once, build the variant and measure it against the original (report.json's verification)")
}

func (f *srcFlags) validate(t *shared.TargetFlags, profile bool) error {
	switch {
	case f.Verify && (f.Dir == "" || !profile):
		return shared.UsageError{Msg: "--verify needs --src DIR (the source it rewrites) and --profile (the findings it verifies)"}
	case f.Dir == "" && f.runGiven:
		return shared.UsageError{Msg: "--run starts what --src builds: give --src DIR"}
	case f.Dir == "":
		return nil
	case t.Target != "":
		return shared.UsageError{Msg: "--src and --target both name the target: give one"}
	case f.StartTimeout <= 0:
		return shared.UsageError{Msg: "--start-timeout must be positive"}
	}
	if st, err := os.Stat(f.Dir); err != nil || !st.IsDir() {
		return shared.UsageError{Msg: fmt.Sprintf("--src %s: not a folder", f.Dir)}
	}
	if f.runGiven {
		if _, err := shared.CommandWords("run", f.Run); err != nil {
			return err
		}
	}
	return nil
}

// open builds --src and starts it: the target, and the cleanup that stops
// it and removes the binary. A build that fails is a bad command line (exit
// 2): the user's source, not the run, is at fault.
func (f *srcFlags) open(ctx context.Context, t *shared.TargetFlags, file *shared.TargetFile, stderr io.Writer) (*probes.Target, func(), error) {
	fmt.Fprintf(stderr, "probe: building %s…\n", f.Dir)
	bin, err := srctarget.Build(ctx, f.Dir, "")
	var be *verify.BuildError
	if errors.As(err, &be) {
		return nil, nil, shared.UsageError{Msg: be.Error()}
	}
	if err != nil {
		return nil, nil, err
	}
	child, err := bin.Start(ctx, f.Run, f.StartTimeout)
	if err != nil {
		bin.Remove()
		return nil, nil, fmt.Errorf("--src %s: %v", f.Dir, err)
	}
	u, err := shared.ParseTarget(child.URL)
	if err != nil {
		child.Stop()
		bin.Remove()
		return nil, nil, err
	}
	header := t.Header()
	if file != nil { // the file's headers first, as OpenTarget puts them
		header = append(append(header[:0:0], file.Headers...), header...)
	}
	tg := &probes.Target{URL: u, Header: header, Child: child, HTTP2: t.HTTP2Of()}
	if err := probes.CheckHTTP2(tg, 10*time.Second); err != nil {
		child.Stop()
		bin.Remove()
		return nil, nil, fmt.Errorf("the server built from %s does not answer over %s: %v", f.Dir, tg.Protocol(), err)
	}
	f.bin = bin
	return tg, func() { child.Stop(); bin.Remove() }, nil
}

// verification is --verify on one microload's run: the plan pipeline.Verify
// follows, made of the built binaries and the run's own microload and
// options.
func (f *srcFlags) verification(ctx context.Context, p *pipeline.Pipeline, rep *report.Run, run *result.Run, o probes.LoadOptions,
	main *probes.Target, microload func() probes.Microload, say func(string)) []report.Verification {
	original, err := f.bin.Version("before", "original", f.Run, f.StartTimeout)
	if err != nil {
		say("verify: " + err.Error())
		return nil
	}
	plan := verification.Plan{Dir: f.Dir, Original: original, Microload: microload, Options: o, Rounds: verifyRounds,
		Calls: verifyCalls, Say: say,
		Target: func(u *url.URL, child *target.Child) *probes.Target {
			return &probes.Target{URL: u, Header: main.Header, Child: child, HTTP2: main.HTTP2}
		},
		Variant: func(ctx context.Context, overlay string) (*pipeline.Version, func(), error) {
			bin, err := srctarget.Build(ctx, f.Dir, overlay)
			if err != nil {
				return nil, nil, err
			}
			v, err := bin.Version("after", "variant", f.Run, f.StartTimeout)
			if err != nil {
				bin.Remove()
				return nil, nil, err
			}
			return v, bin.Remove, nil
		}}
	return verification.Run(ctx, p, rep, run, plan)
}

// Rounds a side, and replies compared, per verification: 3 rounds of the
// run's --duration each, so one verification costs about 6 runs.
const (
	verifyRounds = 3
	verifyCalls  = 32
)
