package shared

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/probehq/probe/fixtures"
	"github.com/probehq/probe/fixtures/site"
	"github.com/probehq/probe/fixtures/vault"
	"github.com/probehq/probe/plan"
	"github.com/probehq/probe/probes/fuzz"
	"github.com/probehq/probe/probes/web"
	"github.com/probehq/probe/target"
)

// This file is the one adapter that knows the reference target: how probe
// starts it, what its note queries look like, how it is fuzzed and which
// two versions `probe ab --fixture` compares. The libraries below the
// command know nothing of it.

// fixtureStart says how to start the fixture as a child process.
type FixtureStart struct {
	Mode      string
	Notes     int
	Vault     string // a vault folder to serve; empty: generate notes
	Synthetic bool
	Key       string
	Keys      []string // more keys of the keyed class (probe agents), one a line after key in the environment
	Projects  int      // MCP projects (probe agents --projects); 0: one
	// contention turns on the fixture's mutex and block profiles (probe
	// agents --profile: the lock every write and search queue on).
	Contention bool
	MaxStack   string    // --max-stack of the fixture; empty: Go's default
	MemLimit   uint64    // memory cap in bytes (target.ChildSpec); 0: none
	Stderr     io.Writer // gets a copy of the fixture's stderr
}

// startFixture runs `probe fixture serve` (this binary) on a free loopback
// port and waits until it listens (the vault's load takes seconds).
func StartFixture(ctx context.Context, o FixtureStart) (*target.Child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{exe, "fixture", "serve", "--addr", "127.0.0.1:0", "--mode", o.Mode, "--notes", fmt.Sprint(o.Notes)}
	if o.Vault != "" {
		args = append(args, "--vault", o.Vault)
	}
	if o.Synthetic {
		args = append(args, "--synthetic")
	}
	if o.Key == "" {
		o.Key = fixtures.DefaultKey
	}
	if o.MaxStack != "" {
		args = append(args, "--max-stack", o.MaxStack)
	}
	if o.Projects > 1 {
		args = append(args, "--projects", fmt.Sprint(o.Projects))
	}
	if o.Contention {
		args = append(args, "--contention-profiles")
	}
	// The key goes by the environment: the command line is anyone's to read.
	env := strings.Join(append([]string{o.Key}, o.Keys...), "\n")
	c, err := target.Start(ctx, target.ChildSpec{Argv: args, Env: []string{fixtures.KeyEnv + "=" + env}, Wait: 3 * time.Minute,
		MemLimit: o.MemLimit, Stderr: o.Stderr})
	if err != nil {
		return nil, fmt.Errorf("fixture: %v", err)
	}
	return c, nil
}

// fixtureMicroloads are what `probe all` runs, in order (plan's table).
var FixtureMicroloads = plan.All()

// fixtureBuild says what a microload is built knowing: the fixture's note
// queries when probe started it; on a server given by URL, the same queries
// for whichever server announces the fixture's dialect (what it announces
// tells, not its URL or port).
func fixtureBuild(fixture bool) plan.BuildOptions {
	known := map[string][]web.Query{site.NoteQueryProfile: FixtureNoteQueries}
	if !fixture {
		return plan.BuildOptions{KnownNoteQueries: known}
	}
	return plan.BuildOptions{NoteQueries: &web.NoteQuery{Path: FixtureQueryPath, Queries: FixtureNoteQueries},
		KnownNoteQueries: known}
}

// fixtureABMicroloads are what `probe ab --fixture` compares: seed 002's
// four hot spots.
var FixtureABMicroloads = []string{"sitemap", "toolslist", "search", "notequery"}

// fixtureQueryPath is the fixture's note-query endpoint.
const FixtureQueryPath = "/query"

// fixtureNoteQueries are what a reader of the site asks, in the fixture's
// Jsonnet: filter by tag, sort by date, count words, group by month.
var FixtureNoteQueries = func() []web.Query {
	var out []web.Query
	for _, q := range []struct{ name, source, params string }{
		{"filter-by-tag", `[n.title for n in std.extVar('notes') if std.member(n.tags, std.extVar('params').tag)]`, `{"tag": "go"}`},
		{"filter-by-tag", `[n.title for n in std.extVar('notes') if std.member(n.tags, std.extVar('params').tag)]`, `{"tag": "travel"}`},
		{"sort-by-date", `local notes = std.extVar('notes'); [{title: n.title, date: n.date} for n in std.sort(notes, ` +
			`function(n) n.date)][std.length(notes) - 10:]`, `{}`},
		{"count-words", `std.foldl(function(acc, n) acc + n.words, std.extVar('notes'), 0)`, `{}`},
		{"group-by-month", `local notes = [n for n in std.extVar('notes') if std.startsWith(n.date, std.extVar('params').year)];
{ [m]: std.length([1 for n in notes if std.startsWith(n.date, m)]) for m in std.set([std.substr(n.date, 0, 7) for n in notes]) }`,
			`{"year": "2024"}`},
	} {
		body, _ := json.Marshal(map[string]any{"query": q.source, "params": json.RawMessage(q.params)})
		out = append(out, web.Query{Name: q.name, Key: q.name + " " + q.params, Body: body})
	}
	return out
}()

// fixtureFuzzTemplates are the fixture's ways in to its Jsonnet evaluator:
// ad-hoc queries, and the stored ones whose sizes come from the URL.
func FixtureFuzzTemplates() []*fuzz.Template {
	specs := []struct{ method, path, body string }{
		{"POST", "/query", `{"query": "{jsonnet}"}`},
		{"POST", "/query", `{"query": "{jsonnet}", "params": {json}}`},
		{"GET", "/q/link-walk?depth={int}", ""},
		{"GET", "/q/most-linking?limit={int}", ""},
		{"GET", "/q/by-tag?tag={str}", ""},
		{"GET", "/q/recent?limit={int}", ""},
	}
	var out []*fuzz.Template
	for _, s := range specs {
		t, err := fuzz.ParseTemplate(s.method, s.path, s.body)
		if err != nil {
			panic(err) // the specs above are constants
		}
		out = append(out, t)
	}
	return out
}

// fixtureCorpus are note queries over std.extVar('notes') with their sizes
// from the boundary set: a notes site's own ways to die.
var FixtureCorpus = []fuzz.Seed{
	{Name: "notes-link-walk", Format: `local notes = std.extVar('notes'); local byPath = { [n.path]: n for n in notes }; local ` +
		`walk(p, k) = if k <= 0 then p else local n = std.get(byPath, p, null); if n == null || std.length(n.links) == 0 then p ` +
		`else walk(n.links[0], k - 1) tailstrict; walk([n for n in notes if std.length(n.links) > 0][0].path, %d)`},
	{Name: "notes-repeat", Format: `std.length(std.flattenArrays(std.makeArray(%d, function(i) std.extVar('notes'))))`},
	{Name: "notes-index", Format: `std.sort(std.extVar('notes'), function(n) n.date)[%d].title`},
	{Name: "notes-filter", Format: `[n.title for n in std.extVar('notes') if std.length(n.links) > %d]`},
}

// fixtureServeCommand is `probe fixture serve`.
func FixtureServeCommand(fs *flag.FlagSet) Runner {
	addr := fs.String("addr", "127.0.0.1:8080", "listen address (port 0: a free port)")
	mode := fs.String("mode", string(site.PerRequest), "per-request (seed 002's hot spots) or load-time (fixed)")
	notes := fs.Int("notes", vault.DefaultNotes, "notes in the generated vault")
	synthetic := fs.Bool("synthetic", false, "500-byte notes instead of realistic ~9 KB ones")
	seed := fs.Uint64("seed", 1, "vault generator seed")
	dir := fs.String("vault", "", "serve this folder of Markdown notes (an Obsidian vault) instead of a generated one")
	keyFile := fs.String("key-file", "", "file holding the keyed class's bearer token (sees private notes, admin endpoints), "+
		"more lines more keys for MCP agents; or $"+fixtures.KeyEnv+"; default "+fixtures.DefaultKey+", loopback only")
	projects := fs.Int("projects", 1, "MCP projects p1…pN (the tools' project argument), each its own generated vault and index")
	contention := fs.Bool("contention-profiles", false, "record mutex and block profiles (/debug/pprof/mutex, "+
		"/debug/pprof/block): the locks requests wait on")
	fs.Func("key", "not taken: a key on the command line is anyone's to read; use --key-file or $"+fixtures.KeyEnv, func(string) error {
		return fmt.Errorf("a key on the command line is anyone's to read (/proc/PID/cmdline): put it in a file for --key-file, or in $%s",
			fixtures.KeyEnv)
	})
	maxStack := fs.String("max-stack", "", "cap each goroutine's stack (e.g. 64MB; Go's default is 1GB): fuzz runs use it so a "+
		"stack overflow takes milliseconds, not tens of seconds")
	return func(ctx context.Context, s Streams, words []string) error {
		if err := NoWords("fixture serve", words); err != nil {
			return err
		}
		m, err := site.ParseMode(*mode)
		if err != nil {
			return UsageError{"--mode: " + err.Error()}
		}
		if *notes <= 0 {
			return UsageError{fmt.Sprintf("--notes must be positive, got %d", *notes)}
		}
		if *maxStack != "" {
			n, err := ParseBytes(*maxStack)
			if err != nil || n < 1<<20 {
				return UsageError{fmt.Sprintf("--max-stack: want a size of at least 1MB such as 64MB, got %q", *maxStack)}
			}
			debug.SetMaxStack(int(n))
		}
		if *contention {
			runtime.SetMutexProfileFraction(5)
			runtime.SetBlockProfileRate(100000) // one event per 100 µs blocked
		}
		if *projects < 1 || *projects > 64 {
			return UsageError{fmt.Sprintf("--projects %d: want 1 to 64", *projects)}
		}
		keys := KeyLines(os.Getenv(fixtures.KeyEnv))
		if *keyFile != "" {
			b, err := os.ReadFile(*keyFile)
			if err != nil {
				return UsageError{"--key-file: " + err.Error()}
			}
			if keys = KeyLines(string(b)); len(keys) == 0 || slices.Contains(keys, "") {
				return UsageError{"--key-file " + *keyFile + ": want one key a line"}
			}
		}
		key := ""
		if len(keys) > 0 {
			key, keys = keys[0], keys[1:]
		}
		err = fixtures.Serve(ctx, fixtures.ServeOptions{Addr: *addr, Mode: m, Notes: *notes, Synthetic: *synthetic,
			Seed: *seed, Vault: *dir, Key: key, Keys: keys, Projects: *projects, Stdout: s.Stdout, Stderr: s.Stderr})
		if errors.Is(err, fixtures.ErrPublicKey) {
			return UsageError{err.Error()}
		}
		return err
	}
}

// keyLines are the keys of a key file or $PROBE_FIXTURE_KEY, one a line.
func KeyLines(s string) []string {
	if s = strings.TrimSpace(s); s == "" {
		return nil
	}
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return lines
}

// parseBytes reads a size such as 64MB or 4GiB.
func ParseBytes(s string) (uint64, error) { return humanize.ParseBytes(s) }
