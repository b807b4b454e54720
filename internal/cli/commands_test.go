package cli

import (
	"context"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/web"
	"github.com/probehq/probe/result"
)

// Every command of the table answers -h with its flags and exit 0, and
// `probe --help` lists every command.
func TestHelpForEveryCommand(t *testing.T) {
	code, stdout, _ := probeCmd.Run(t, context.Background(), "--help")
	if code != exitOK {
		t.Fatalf("--help: exit %d", code)
	}
	for _, c := range commands {
		if !strings.Contains(stdout, "  "+c.name+" ") {
			t.Errorf("--help does not list %q", c.name)
		}
		args := append(strings.Fields(c.name), "-h")
		code, out, errOut := probeCmd.Run(t, context.Background(), args...)
		if code != exitOK || !strings.HasPrefix(out, "usage: probe "+c.name) || errOut != "" {
			t.Errorf("%v: exit %d, stdout %.80q, stderr %q", args, code, out, errOut)
		}
	}
	for _, fam := range []string{"fuzz", "fixture"} {
		code, out, _ := probeCmd.Run(t, context.Background(), fam, "-h")
		if code != exitOK || !strings.Contains(out, "probe "+fam+" ") {
			t.Errorf("%s -h: exit %d, %q", fam, code, out)
		}
	}
}

// The load flags are declared once: every command that loads takes the
// same names, and validates them the same way.
func TestLoadFlagsAreSharedAndValidatedAlike(t *testing.T) {
	for _, name := range []string{"sitemap", "all", "http", "ab"} {
		cmd, _ := lookup([]string{name})
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cmd.setup(fs)
		for _, f := range []string{"duration", "warmup", "timeout", "concurrency", "rate", "max-body", "reply-memory", "profile", "pprof",
			"rules", "wall", "max-profile", "out", "force", "json", "key", "notes"} {
			if fs.Lookup(f) == nil {
				t.Errorf("probe %s has no --%s", name, f)
			}
		}
		code, _, stderr := probeCmd.Run(t, context.Background(), name, "--concurrency", "0", "--fixture")
		if name != "ab" {
			code, _, stderr = probeCmd.Run(t, context.Background(), name, "--concurrency", "0")
		}
		if code != exitUsage || !strings.Contains(stderr, "--concurrency 0: want 1 to") {
			t.Errorf("probe %s --concurrency 0: exit %d, %q", name, code, stderr)
		}
	}
}

// The engine's warnings name the problem; the command adds the flag.
func TestWarningsGetFlagHints(t *testing.T) {
	ws := []result.Warning{{Kind: "rate-not-kept", Message: "sent 10 of 100"}, {Kind: "machine-busy", Message: "busy"}}
	shared.HintWarnings(ws)
	if ws[0].Message != "sent 10 of 100 (raise --concurrency)" || ws[1].Message != "busy" {
		t.Errorf("%+v", ws)
	}
}

// The pipeline the commands run adds the flag hints to the engine's
// warnings, and shows nothing without a progress line.
func TestThePipelineOfTheCommandsHintsFlags(t *testing.T) {
	o := shared.PipelineOptions(nil, nil)
	if o.UI != nil {
		t.Errorf("a nil progress line is a UI: %#v", o.UI)
	}
	o.Load = func(ctx context.Context, ml probes.Microload, tg *probes.Target, lo probes.LoadOptions) (*result.Run, error) {
		return &result.Run{Microload: ml.Name(), Errors: map[string]int64{},
			Warnings: []result.Warning{{Kind: "generator-bound", Message: "probe used 1.9 of its 2 CPUs"}}}, nil
	}
	rep, _, err := pipeline.New(o).Measure(context.Background(), "x", &web.Sitemap{}, &probes.Target{}, probes.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warnings) != 1 || rep.Warnings[0].Message != "probe used 1.9 of its 2 CPUs (try --pin)" {
		t.Errorf("warnings %+v", rep.Warnings)
	}
}
