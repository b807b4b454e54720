package cli

import (
	"context"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/probes"
)

// Every command of the table answers -h with its flags and exit 0, and
// `probe --help` lists every command.
func TestHelpForEveryCommand(t *testing.T) {
	code, stdout, _ := runProbe(t, context.Background(), "--help")
	if code != exitOK {
		t.Fatalf("--help: exit %d", code)
	}
	for _, c := range commands {
		if !strings.Contains(stdout, "  "+c.name+" ") {
			t.Errorf("--help does not list %q", c.name)
		}
		args := append(strings.Fields(c.name), "-h")
		code, out, errOut := runProbe(t, context.Background(), args...)
		if code != exitOK || !strings.HasPrefix(out, "usage: probe "+c.name) || errOut != "" {
			t.Errorf("%v: exit %d, stdout %.80q, stderr %q", args, code, out, errOut)
		}
	}
	for _, fam := range []string{"fuzz", "fixture"} {
		code, out, _ := runProbe(t, context.Background(), fam, "-h")
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
		for _, f := range []string{"duration", "warmup", "timeout", "concurrency", "rate", "max-body", "reply-memory", "profile", "pprof", "rules", "wall", "max-profile", "out", "force", "json", "key", "notes"} {
			if fs.Lookup(f) == nil {
				t.Errorf("probe %s has no --%s", name, f)
			}
		}
		code, _, stderr := runProbe(t, context.Background(), name, "--concurrency", "0", "--fixture")
		if name != "ab" {
			code, _, stderr = runProbe(t, context.Background(), name, "--concurrency", "0")
		}
		if code != exitUsage || !strings.Contains(stderr, "--concurrency 0: want 1 to") {
			t.Errorf("probe %s --concurrency 0: exit %d, %q", name, code, stderr)
		}
	}
}

func TestHangFromTimeouts(t *testing.T) {
	run := &probes.Run{Microload: "search", Errors: map[string]int64{"timeout": 3}, Ops: []*probes.OpStats{{Name: "GET /search"}}}
	cs := crashesOf(run)
	if len(cs) != 1 || cs[0].Class != "hang" || !strings.Contains(cs[0].Evidence, "3 requests") || cs[0].Endpoint != "GET /search" {
		t.Errorf("crashes %+v", cs)
	}
	run = &probes.Run{Microload: "page", Errors: map[string]int64{}, TargetExit: &probes.Exit{Status: "exit status 2",
		Stderr: "runtime: goroutine stack exceeds 1000000000-byte limit\nfatal error: stack overflow\n"}}
	if cs := crashesOf(run); len(cs) != 1 || cs[0].Class != "stack-overflow" {
		t.Errorf("a dead target: %+v", cs)
	}
}

// The engine's warnings name the problem; the command adds the flag.
func TestWarningsGetFlagHints(t *testing.T) {
	ws := []probes.Warning{{Kind: "rate-not-kept", Message: "sent 10 of 100"}, {Kind: "machine-busy", Message: "busy"}}
	hintWarnings(ws)
	if ws[0].Message != "sent 10 of 100 (raise --concurrency)" || ws[1].Message != "busy" {
		t.Errorf("%+v", ws)
	}
}

// The pipeline's parts can be swapped: a fake load engine's run goes
// through the same analyze and write steps.
func TestPipelineWithAFakeLoad(t *testing.T) {
	p := newPipeline(nil, nil)
	p.load = func(ctx context.Context, ml probes.Microload, tg *probes.Target, o probes.LoadOptions) (*probes.Run, error) {
		return &probes.Run{Microload: ml.Name(), Target: "http://fake", Mode: "closed", Duration: time.Second,
			Errors: map[string]int64{"timeout": 1}, Warnings: []probes.Warning{{Kind: "generator-bound", Message: "probe used 1.9 of its 2 CPUs"}}}, nil
	}
	rep, _, err := p.measure(context.Background(), "x", &probes.Sitemap{}, &probes.Target{}, probes.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Microload != "sitemap" || len(rep.Crashes) != 1 || rep.Crashes[0].Class != "hang" || !strings.HasSuffix(rep.Warnings[0].Message, "(try --pin)") {
		t.Errorf("report %+v", rep)
	}
}
