package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/target"
)

// A placeholder is filled after the command is split: a value with spaces,
// quotes, a $ or another placeholder's name is one word, as it is.
func TestCommandFillsAfterSplit(t *testing.T) {
	out := `/tmp/my "build" 'dir' $HOME {port}/bin`
	got, err := shared.SplitAndFill("build", `go build -o {out} "./cmd/my server"`, map[string]string{"{out}": out})
	want := []string{"go", "build", "-o", out, "./cmd/my server"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %q %v, want %q", got, err, want)
	}
	argv, err := shared.CommandWords("cmd", `server --data={vault} --listen $ADDR`)
	if err != nil {
		t.Fatal(err)
	}
	got = shared.FillWords(argv, map[string]string{"{vault}": "a {addr} b", "{addr}": "127.0.0.1:9"})
	want = []string{"server", "--data=a {addr} b", "--listen", "127.0.0.1:9"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A server started with {vault} gets the folder as one argument.
func TestStartServerGetsOneArgument(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, `my vault "two" 'q' $HOME`)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	argvLog := filepath.Join(base, "argv.log")
	t.Setenv("PROBE_TEST_ARGV", argvLog)
	self, _ := os.Executable()
	argv, err := shared.CommandWords("cmd", shared.ShellJoin([]string{self})+" argv-server {vault}")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	child, err := shared.StartServer(ctx, argv, "", map[string]string{"{vault}": dir}, target.ChildSpec{Wait: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	child.Stop()
	raw, _ := os.ReadFile(argvLog)
	var got []string
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(raw))), &got); err != nil || !reflect.DeepEqual(got,
		[]string{"argv-server", dir}) {
		t.Errorf("the server got %s (%v), want [argv-server %q]", raw, err, dir)
	}
}

// serveArgv appends its arguments to $PROBE_TEST_ARGV (a JSON list) and
// answers 200 on $ADDR until it is stopped.
func serveArgv() {
	line, _ := json.Marshal(os.Args[1:])
	if err := os.WriteFile(os.Getenv("PROBE_TEST_ARGV"), append(line, '\n'), 0o644); err != nil {
		os.Exit(2)
	}
	http.ListenAndServe(os.Getenv("ADDR"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	os.Exit(1)
}
