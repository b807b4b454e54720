// Package testbuild builds a test's helper program (a victim server, a
// server with a seeded fault, a program that dies on purpose) with the go
// command, once per test binary and package: the tests of a package share
// the build, and a failed build fails each test that asks for it.
package testbuild

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

type build struct {
	once sync.Once
	bin  string
	err  string // the build's error and output; "" when it built
}

var (
	mu     sync.Mutex
	builds = map[string]*build{}
)

// Program is the binary of the main package pkg, as go build takes it from
// the test's folder ("./testdata/victim", "../../probes/fuzz/testdata/victim",
// a module path). The go.mod's toolchain builds it (GOTOOLCHAIN=go1.27.3
// when the environment names none). The binary lives in a folder of its
// own until the machine's temporary files are cleared: later tests of the
// binary use it after the first one ends.
func Program(t testing.TB, pkg string) string {
	t.Helper()
	mu.Lock()
	b := builds[pkg]
	if b == nil {
		b = &build{}
		builds[pkg] = b
	}
	mu.Unlock()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "probe-testbuild")
		if err != nil {
			b.err = err.Error()
			return
		}
		b.bin = filepath.Join(dir, filepath.Base(strings.TrimSuffix(pkg, "/")))
		cmd := exec.Command("go", "build", "-o", b.bin, pkg)
		if os.Getenv("GOTOOLCHAIN") == "" {
			cmd.Env = append(os.Environ(), "GOTOOLCHAIN=go1.27.3")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = err.Error() + "\n" + string(out)
		}
	})
	if b.err != "" {
		t.Fatalf("building %s: %s", pkg, b.err)
	}
	return b.bin
}

// HotLine is the absolute path of dir's main.go and the number of its line
// that ends "// hot: mark": where a profile of the helper program puts a
// frame the test expects. No such line fails the test.
func HotLine(t testing.TB, dir, mark string) (file string, line int) {
	t.Helper()
	file, err := filepath.Abs(filepath.Join(dir, "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(src), "\n") {
		if strings.HasSuffix(l, "// hot: "+mark) {
			return file, i + 1
		}
	}
	t.Fatalf("no line marked %q in %s", mark, file)
	return "", 0
}
