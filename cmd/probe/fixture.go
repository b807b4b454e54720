package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/dustin/go-humanize"

	"probe/fixtures"
	"probe/fixtures/site"
	"probe/fixtures/vault"
)

func runFixture(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "serve" {
		return usageError{"usage: probe fixture serve [--addr A] [--mode per-request|load-time] [--notes N] [--synthetic] [--vault DIR]"}
	}
	fs := flag.NewFlagSet("probe fixture serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address (port 0: a free port)")
	mode := fs.String("mode", string(site.PerRequest), "per-request (seed 002's hot spots) or load-time (fixed)")
	notes := fs.Int("notes", vault.DefaultNotes, "notes in the generated vault")
	synthetic := fs.Bool("synthetic", false, "500-byte notes instead of realistic ~9 KB ones")
	seed := fs.Uint64("seed", 1, "vault generator seed")
	dir := fs.String("vault", "", "serve this folder of Markdown notes (an Obsidian vault) instead of a generated one")
	key := fs.String("key", fixtures.DefaultKey, "bearer token of the keyed access class (sees private notes, admin endpoints)")
	maxStack := fs.String("max-stack", "", "cap each goroutine's stack (e.g. 64MB; Go's default is 1GB): fuzz runs use it so a stack overflow takes milliseconds, not tens of seconds")
	if err := fs.Parse(args[1:]); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("fixture serve: unexpected argument %q", fs.Arg(0))}
	}
	m, err := site.ParseMode(*mode)
	if err != nil {
		return usageError{"--mode: " + err.Error()}
	}
	if *notes <= 0 {
		return usageError{fmt.Sprintf("--notes must be positive, got %d", *notes)}
	}
	if *maxStack != "" {
		n, err := parseBytes(*maxStack)
		if err != nil || n < 1<<20 {
			return usageError{fmt.Sprintf("--max-stack: want a size of at least 1MB such as 64MB, got %q", *maxStack)}
		}
		debug.SetMaxStack(int(n))
	}
	return fixtures.Serve(ctx, fixtures.ServeOptions{Addr: *addr, Mode: m, Notes: *notes, Synthetic: *synthetic,
		Seed: *seed, Vault: *dir, Key: *key, Stdout: stdout, Stderr: stderr})
}

// parseBytes reads a size such as 64MB or 4GiB.
func parseBytes(s string) (uint64, error) { return humanize.ParseBytes(s) }
