package cli

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/shell"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// startCommand starts a server command (`probe ab --before`, `probe fuzz
// http --cmd`) listening on addr, or on a fresh loopback port when addr is
// empty: {addr} and {port} in argv are replaced, ADDR and PORT are set, and
// it is ready once the address takes connections. spec gives the rest.
func startCommand(ctx context.Context, argv []string, addr string, spec probes.ChildSpec) (*probes.Child, error) {
	if addr == "" {
		var err error
		if addr, err = freeLoopbackAddr(); err != nil {
			return nil, err
		}
	}
	_, port, _ := net.SplitHostPort(addr)
	spec.Argv, spec.Addr = fillAddr(argv, addr, port), addr
	spec.Env = append(spec.Env, "PORT="+port, "ADDR="+addr)
	return probes.Start(ctx, spec)
}

// freeLoopbackAddr finds a port nobody listens on; a fresh one per start,
// so a restart never waits for the dead process's socket.
func freeLoopbackAddr() (string, error) {
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
func commandWords(flagName, command string) ([]string, error) {
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
		return nil, usageError{fmt.Sprintf("--%s %q: not a command: %v", flagName, command, err)}
	case len(argv) == 0:
		return nil, usageError{fmt.Sprintf("--%s: empty command", flagName)}
	case len(unknown) > 0:
		return nil, usageError{fmt.Sprintf("--%s %q: %s is not expanded (probe runs the command without a shell): write its value, or use {port} and {addr} ($PORT and $ADDR work too)", flagName, command, strings.Join(unknown, ", "))}
	}
	return argv, nil
}

func fillAddr(argv []string, addr, port string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = strings.NewReplacer("{addr}", addr, "{port}", port).Replace(a)
	}
	return out
}

// shellJoin writes argv as a command a shell reads back as argv, for the
// reproduction a user pastes.
func shellJoin(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = report.ShellQuote(a)
	}
	return strings.Join(words, " ")
}
