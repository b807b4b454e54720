package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// serverV1 and serverV2 are two commits of a tiny server: v2 does a tenth
// of v1's work per request.
const serverSource = `package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"net/http"
)

const rounds = ROUNDS

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "")
	flag.Parse()
	http.HandleFunc("/work", func(w http.ResponseWriter, r *http.Request) {
		sum := sha256.Sum256([]byte(r.URL.Path))
		for i := 0; i < rounds; i++ {
			sum = sha256.Sum256(sum[:])
		}
		fmt.Fprintf(w, "%x\n", sum[:4])
	})
	http.ListenAndServe(*addr, nil)
}
`

// gitRepo makes a repository with v1 and v2 tagged, and a v3 that does
// not compile.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q")
	write("go.mod", "module server\n\ngo 1.22\n")
	for _, v := range []struct{ tag, rounds string }{{"v1", "20000"}, {"v2", "2000"}, {"v3", "undefined_name"}} {
		write("main.go", strings.Replace(serverSource, "ROUNDS", v.rounds, 1))
		git("add", ".")
		git("commit", "-qm", v.tag)
		git("tag", v.tag)
	}
	return dir
}

func TestABBadInput(t *testing.T) {
	repo := gitRepo(t)
	victim := buildVictim(t)
	notDir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"ab"}, exitUsage, "give --before CMD --after CMD"},
		{[]string{"ab", "--before", victim, "http", "--path", "/"}, exitUsage, "--before and --after go together"},
		{[]string{"ab", "--fixture", "sitmap"}, exitUsage, `unknown microload "sitmap"`},
		{[]string{"ab", "--before", victim, "--after", victim}, exitUsage, "name the microloads"},
		{[]string{"ab", "--git", repo, "--before-ref", "v1", "--after-ref", "v9", "http", "--path", "/work"}, exitError, `--after-ref "v9": no such commit`},
		{[]string{"ab", "--git", notDir, "--before-ref", "v1", "--after-ref", "v2", "http", "--path", "/work"}, exitError, "is not a git repository"},
		{[]string{"compare", notDir}, exitUsage, "usage: probe compare"},
		{[]string{"compare", notDir, notDir}, exitError, "is not a probe report folder"},
	} {
		badInput(t, tc.args, tc.code, tc.want)
	}

	// A build that fails shows its output.
	code, _, stderr := runProbe(t, context.Background(), "ab", "--git", repo, "--before-ref", "v1", "--after-ref", "v3",
		"--build", "go build -o {out} .", "http", "--path", "/work", "--out", t.TempDir())
	if code != exitError || !strings.Contains(stderr, "building v3") || !strings.Contains(stderr, "undefined: undefined_name") {
		t.Errorf("failing build: exit %d, stderr %q", code, stderr)
	}
}

// TestABVersionThatFails: one side that will not start, one that dies mid
