// Package testrepo makes, for tests, a git repository of a tiny server in
// three versions: what probe ab --git builds and compares.
package testrepo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// serverV1 and serverV2 are two commits of a tiny server: v2 does a tenth
// of v1's work per request.
const ServerSource = `package main

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

// GitServer makes a repository with v1 and v2 tagged, and a v3 that does
// not compile.
func GitServer(t testing.TB) string {
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
		write("main.go", strings.Replace(ServerSource, "ROUNDS", v.rounds, 1))
		git("add", ".")
		git("commit", "-qm", v.tag)
		git("tag", v.tag)
	}
	return dir
}
