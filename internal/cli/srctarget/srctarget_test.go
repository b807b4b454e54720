package srctarget

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/internal/cli/clitest"
)

// module writes a one-file main package.
func module(t *testing.T, main string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/s\n\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644)
	return dir
}

// A run command without {addr} still finds its address: ADDR is set, as for
// probe ab --run.
func TestABuiltServerStartsOnTheAddressInItsEnvironment(t *testing.T) {
	dir := module(t, `package main

import (
	"net/http"
	"os"
)

func main() {
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("port " + os.Getenv("PORT"))) })
	http.ListenAndServe(os.Getenv("ADDR"), nil)
}
`)
	ctx := context.Background()
	b, err := Build(ctx, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Remove()
	ch, err := b.Start(ctx, "{out}", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Stop()
	_, body := clitest.Get(t, http.DefaultClient, ch.URL+"/")
	if !strings.HasPrefix(string(body), "port ") || !strings.HasSuffix(ch.URL, strings.TrimPrefix(string(body), "port ")) {
		t.Errorf("served %q at %s", body, ch.URL)
	}
}

func TestABuiltServerThatExitsIsAnErrorNotAWait(t *testing.T) {
	dir := module(t, "package main\n\nimport \"os\"\n\n"+
		"func main() { os.Stderr.WriteString(\"no config\\n\"); os.Exit(3) }\n")
	ctx := context.Background()
	b, err := Build(ctx, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Remove()
	ch, err := b.Start(ctx, DefaultRun, 10*time.Minute)
	if err == nil {
		ch.Stop()
		t.Fatal("a server that exits started")
	}
	// Told by its exit and its own words, not by the wait running out.
	if !strings.Contains(err.Error(), "exited before it listened") || !strings.Contains(err.Error(), "no config") {
		t.Errorf("got %v", err)
	}
}
