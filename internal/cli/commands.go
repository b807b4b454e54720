package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/probehq/probe/internal/cli/analysis"
	"github.com/probehq/probe/internal/cli/experiments"
	"github.com/probehq/probe/internal/cli/fuzzing"
	"github.com/probehq/probe/internal/cli/loads"
	"github.com/probehq/probe/internal/cli/sessions"
	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/plan"
)

// command is one row of the command table.
type command struct {
	name    string // "sitemap", "fuzz http"
	args    string // the synopsis after the name
	summary string
	// setup registers the command's flags on fs and returns its runner,
	// bound to them.
	setup func(fs *flag.FlagSet) shared.Runner
}

// commands is the command line: `probe --help`, `probe <command> -h` and
// dispatch all read this table. The named microloads' rows come from
// plan's table of microloads.
var commands = append(microloadCommands(), []command{
	{"all", "[flags]", "every microload in turn against one target, one combined report", loads.AllCommand},
	{"http", "--path P [flags]", "any endpoint of any server; --param name=v1,v2,… varies a query parameter", loads.HTTPCommand},
	{"grpc", "[--target URL --call pkg.Service/Method] [--data JSON] [flags]", "a unary or server-streaming gRPC method " +
		"(reflection or --proto describes it) over probe's HTTP/2; the fixture's search without --target", loads.GRPCCommand},
	{"init", "--target URL [--out probe.jsonnet]", "write a target file of what the server announces (sitemap, pages, feeds, " +
		"search, MCP), to edit and run with --file", initCommand},
	{"analyze", "[flags] PROFILE… | --from pyroscope://HOST:PORT|parca://HOST:PORT --service NAME", "the analyzers on pprof " +
		"profiles taken elsewhere", analysis.AnalyzeCommand},
	{"flame", "PROFILE -o FILE.html|FILE.svg [flags]", "a flame graph of any profile (differential with --base)", analysis.FlameCommand},
	{"fuzz notequery", "[flags]", "find the note queries that crash, hang or panic the fixture", fuzzing.FuzzNoteQueryCommand},
	{"fuzz http", `--cmd "SERVER COMMAND" --path "/x?d={int}" [flags]`, "find the inputs that crash, hang or panic a server " +
		"probe starts and supervises", fuzzing.FuzzHTTPCommand},
	{"fuzz mcp", `--cmd "SERVER COMMAND" [--path /mcp] [--tool NAME …] [flags]`, "find the tool arguments that crash, hang or " +
		"panic an MCP server probe starts and supervises, drawn from each tool's input schema", fuzzing.FuzzMCPCommand},
	{"ab", "--before CMD --after CMD | --git DIR --before-ref A --after-ref B | --fixture [flags] [MICROLOAD…]",
		"two versions, interleaved runs on this machine, statistics on what changed", experiments.ABCommand},
	{"merge", "SHARD_DIR… [flags]", "the shards' reports of one run across machines (--shard I/N) merged exactly into one report",
		mergeCommand},
	{"compare", "BEFORE_DIR AFTER_DIR [flags] | --from URL --service NAME --before SEL --after SEL", "the before/after report " +
		"of two report folders", analysis.CompareCommand},
	{"scale", "[flags] [MICROLOAD…]", "the same target at growing sizes of its data: load, memory, the cost of a change and of " +
		"each request, and how each grows", experiments.ScaleCommand},
	{"ramp", "--ramp FROM:TO/DURATION | --steps R1,R2,…/DURATION [--file F] [flags] [NAME[=WEIGHT]…]",
		"scenarios started at an arrival rate that rises to the knee: how many users, and what gives way first", experiments.RampCommand},
	{"agents", "[--agents N] [--projects N] [--call write=30,search=47,read=23] [flags]",
		"many MCP agents writing, searching and reading at once; then no call failed, no write lost, search finds every last word",
		sessions.AgentsCommand},
	{"ws", "[--connections N --rooms R --events E --rounds K] [flags]", "WebSocket fan-out: N connections in rooms, events in " +
		"rounds, each checked at every connection (missing, duplicated, misrouted) and timed", sessions.WSCommand},
	{"fixture serve", "[flags]", "serve the reference target (a notes site) on loopback", shared.FixtureServeCommand},
}...)

// microloadCommands are the rows of the named microloads.
func microloadCommands() []command {
	var out []command
	for _, k := range plan.Kinds {
		out = append(out, command{k.Name, "[flags]", k.Summary, loads.MicroloadCommand(k.Name)})
	}
	return out
}

// usage is `probe --help`, made from the table.
func usage() string {
	var b strings.Builder
	b.WriteString("usage: probe <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-16s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun 'probe <command> -h' for its flags. Add --profile to a microload to profile the target while it runs.\n")
	return b.String()
}

// lookup finds the command args start with: "fuzz http" before "fuzz".
func lookup(args []string) (*command, []string) {
	for i := range commands {
		words := strings.Fields(commands[i].name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == commands[i].name {
			return &commands[i], args[len(words):]
		}
	}
	return nil, nil
}

// family lists the commands under a first word ("fuzz": fuzz notequery,
// fuzz http).
func family(word string) []command {
	var out []command
	for _, c := range commands {
		if first, _, ok := strings.Cut(c.name, " "); ok && first == word {
			out = append(out, c)
		}
	}
	return out
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return shared.UsageError{Msg: "no command given"}
	}
	if isHelp(args[0]) {
		fmt.Fprint(stdout, usage())
		return nil
	}
	cmd, rest := lookup(args)
	if cmd == nil && hasFlag(args, "file") && !strings.HasPrefix(args[0], "-") {
		// probe NAME --file probe.jsonnet: a microload the file names.
		name := args[0]
		cmd, rest = &command{name: name, args: "--file FILE [flags]", summary: "a microload of a target file",
			setup: func(fs *flag.FlagSet) shared.Runner { return loads.NewLoadCommand(fs, name) }}, args[1:]
	}
	if cmd == nil {
		fam := family(args[0])
		if len(fam) == 0 {
			return shared.UsageError{Msg: fmt.Sprintf("unknown command %q (see probe --help)", args[0])}
		}
		var forms []string
		for _, c := range fam {
			forms = append(forms, "probe "+c.name+" "+c.args)
		}
		if len(args) > 1 && isHelp(args[1]) {
			fmt.Fprintf(stdout, "usage:\n")
			for _, c := range fam {
				fmt.Fprintf(stdout, "  probe %s %s\n      %s\n", c.name, c.args, c.summary)
			}
			return nil
		}
		return shared.UsageError{Msg: "usage: " + strings.Join(forms, " | ")}
	}
	fs := flag.NewFlagSet("probe "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are one line, help goes to stdout
	run := cmd.setup(fs)
	words, err := parseArgs(fs, rest)
	if errors.Is(err, flag.ErrHelp) {
		cmd.help(stdout, fs)
		return nil
	}
	if err != nil {
		return err
	}
	return run(ctx, shared.Streams{Stdout: stdout, Stderr: stderr}, words)
}

// helpGroups are the shared flag groups (flags.go) as `-h` lists them;
// a command's own flags come first.
var helpGroups = []struct {
	title string
	names []string
}{
	{"target", []string{"target", "file", "fixture-mode", "notes", "synthetic", "pin", "key"}},
	{"request", []string{"path", "method", "body", "header", "param"}},
	{"load", []string{"duration", "warmup", "timeout", "concurrency", "rate", "max-body", "reply-memory", "shard", "shards", "run-id"}},
	{"profiling", []string{"profile", "pprof", "rules", "wall", "max-profile", "experiment", "experiment-time", "profiling-overhead"}},
	{"ramp", []string{"ramp", "steps", "slo", "max-errors", "stop-when", "max-in-flight"}},
	{"writes", []string{"during-writes", "write-path", "write-permalink", "freshness-timeout"}},
	{"production profiles", []string{"from", "production", "service", "labels", "type", "since", "start", "end", "tenant", "api-timeout",
		"production-labels", "production-type", "production-since", "production-start", "production-end", "production-header",
		"production-tenant", "production-api-timeout"}},
	{"output", []string{"out", "force", "json", "fail-on"}},
}

// help is `probe <command> -h`: the synopsis, the summary and the flags by
// group.
func (c *command) help(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: probe %s %s\n\n%s.\n", c.name, c.args, strings.ToUpper(c.summary[:1])+c.summary[1:])
	grouped := map[string]string{}
	for _, g := range helpGroups {
		for _, n := range g.names {
			grouped[n] = g.title
		}
	}
	section := func(title string, in func(*flag.Flag) bool) {
		first := true
		fs.VisitAll(func(f *flag.Flag) {
			if !in(f) {
				return
			}
			if first {
				fmt.Fprintf(w, "\n%s:\n", title)
				first = false
			}
			kind, usage := flag.UnquoteUsage(f)
			if kind != "" {
				kind = " " + kind
			}
			fmt.Fprintf(w, "  --%s%s\n      %s", f.Name, kind, usage)
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
				fmt.Fprintf(w, " (default %s)", f.DefValue)
			}
			fmt.Fprintln(w)
		})
	}
	section("flags", func(f *flag.Flag) bool { return grouped[f.Name] == "" })
	for _, g := range helpGroups {
		section(g.title, func(f *flag.Flag) bool { return grouped[f.Name] == g.title })
	}
}

// parseArgs parses flags wherever they stand among the arguments (probe
// flame cpu.pb.gz -o x.html) and returns the other words in order.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, shared.UsageError{Msg: fmt.Sprintf("%v (see %s -h)", err, fs.Name())}
		}
		args = fs.Args()
		if len(args) > 0 {
			rest, args = append(rest, args[0]), args[1:]
		}
	}
	return rest, nil
}

// hasFlag says whether args hold --name or -name (with or without =value).
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		a = strings.TrimLeft(a, "-")
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}
