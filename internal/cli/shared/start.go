package shared

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/shell"

	"github.com/probehq/probe/report"
	"github.com/probehq/probe/target"
)

// A server command becomes a process in two steps, the same for every
// command that takes one (scale --cmd, ab --before/--after, ab --git's
// --build and --run, fuzz http --cmd): commandWords splits it into words,
// then fillWords puts the placeholders' values ({vault}, {out}, {addr},
// {port}) into the words. Filled after the split, a value is part of one
// word whatever it holds: a vault path with a space, a quote or a $ is
// one argument.

// startCommand starts a server command (`probe ab --before`, `probe fuzz
// http --cmd`) listening on addr, or on a fresh loopback port when addr is
// empty: {addr} and {port} in argv are replaced, ADDR and PORT are set, and
// it is ready once the address takes connections. spec gives the rest.
func StartCommand(ctx context.Context, argv []string, addr string, spec target.ChildSpec) (*target.Child, error) {
	return StartServer(ctx, argv, addr, nil, spec)
}

// startServer is startCommand with more placeholders (like {vault}) filled
// in the same pass as {addr} and {port}.
func StartServer(ctx context.Context, argv []string, addr string, values map[string]string, spec target.ChildSpec) (*target.Child, error) {
	if addr == "" {
		var err error
		if addr, err = FreeLoopbackAddr(); err != nil {
			return nil, err
		}
	}
	_, port, _ := net.SplitHostPort(addr)
	all := map[string]string{"{addr}": addr, "{port}": port}
	for k, v := range values {
		all[k] = v
	}
	spec.Argv, spec.Addr = FillWords(argv, all), addr
	spec.Env = append(spec.Env, "PORT="+port, "ADDR="+addr)
	return target.Start(ctx, spec)
}

// FreeLoopbackAddr finds a port nobody listens on; a fresh one per start,
// so a restart never waits for the dead process's socket.
func FreeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// commandWords splits a server command as a shell would, without one:
// quotes are honoured, $PORT and $ADDR become {port} and {addr} (filled in
// at each start), and any other $VAR is refused, since no shell would
// expand it and it would silently become empty.
func CommandWords(flagName, command string) ([]string, error) {
	var unknown []string
	argv, err := shell.Fields(command, func(name string) string {
		switch name {
		case "PORT":
			return "{port}"
		case "ADDR":
			return "{addr}"
		}
		if strings.Contains(command, "$"+name) || strings.Contains(command, "${"+name) {
			unknown = append(unknown, "$"+name)
		}
		return "" // the parser's own (IFS) and anything unset
	})
	switch {
	case err != nil:
		return nil, UsageError{fmt.Sprintf("--%s %q: not a command: %v", flagName, command, err)}
	case len(argv) == 0:
		return nil, UsageError{fmt.Sprintf("--%s: empty command", flagName)}
	case len(unknown) > 0:
		return nil, UsageError{fmt.Sprintf("--%s %q: %s is not expanded (probe runs the command without a shell): write its "+
			"value, or use {port} and {addr} ($PORT and $ADDR work too)", flagName, command, strings.Join(unknown, ", "))}
	}
	return argv, nil
}

// splitAndFill is a command with placeholders known before it starts
// (ab --git's {out}): split into words, then filled.
func SplitAndFill(flagName, command string, values map[string]string) ([]string, error) {
	argv, err := CommandWords(flagName, command)
	if err != nil {
		return nil, err
	}
	return FillWords(argv, values), nil
}

// fillWords replaces each placeholder (a key of values, like "{vault}") in
// each word of argv by its value, in one pass: a value that holds another
// placeholder's name is not filled again.
func FillWords(argv []string, values map[string]string) []string {
	pairs := make([]string, 0, 2*len(values))
	for _, k := range slices.Sorted(maps.Keys(values)) {
		pairs = append(pairs, k, values[k])
	}
	r := strings.NewReplacer(pairs...)
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = r.Replace(a)
	}
	return out
}

func FillAddr(argv []string, addr, port string) []string {
	return FillWords(argv, map[string]string{"{addr}": addr, "{port}": port})
}

// shellJoin writes argv as a command a shell reads back as argv, for the
// reproduction a user pastes.
func ShellJoin(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = report.ShellQuote(a)
	}
	return strings.Join(words, " ")
}
