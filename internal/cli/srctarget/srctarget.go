// Package srctarget is --src: a main package built from the user's source
// and started as the target, the way probe ab --git starts what it built.
package srctarget

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/target"
	"github.com/probehq/probe/verify"
)

// DefaultRun is how a built binary is started, as probe ab --git's --run.
const DefaultRun = "{out} -addr {addr}"

// Binary is a main package built to a temporary file.
type Binary struct {
	Dir  string // the package's folder: the process's working directory
	Path string
	tmp  string
}

// Build builds the main package in dir with the user's go command; overlay
// (a go build -overlay file) replaces sources for a --verify variant, empty
// for the source as it is. A failed build is a *verify.BuildError.
func Build(ctx context.Context, dir, overlay string) (*Binary, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "probe-src-")
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(tmp, "target")
	if err := verify.Build(ctx, abs, overlay, bin); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return &Binary{Dir: abs, Path: bin, tmp: tmp}, nil
}

// Start starts the binary with the run command ({out} is the binary; {addr}
// and {port} a fresh loopback address, also in ADDR and PORT) and waits up
// to wait until it takes connections.
func (b *Binary) Start(ctx context.Context, run string, wait time.Duration) (*target.Child, error) {
	argv, err := b.argv(run)
	if err != nil {
		return nil, err
	}
	return shared.StartCommand(ctx, argv, "", target.ChildSpec{Dir: b.Dir, Wait: wait})
}

// Version is the binary as one side of an interleaved A/B (pipeline.Interleave).
func (b *Binary) Version(side, label, run string, wait time.Duration) (*pipeline.Version, error) {
	argv, err := b.argv(run)
	if err != nil {
		return nil, err
	}
	return &pipeline.Version{Side: side, Label: label, Start: func(ctx context.Context) (*target.Child, error) {
		return shared.StartCommand(ctx, argv, "", target.ChildSpec{Dir: b.Dir, Wait: wait})
	}}, nil
}

func (b *Binary) argv(run string) ([]string, error) {
	if run == "" {
		run = DefaultRun
	}
	return shared.SplitAndFill("run", run, map[string]string{"{out}": b.Path})
}

// Remove deletes the binary; stop its processes first.
func (b *Binary) Remove() { os.RemoveAll(b.tmp) }
