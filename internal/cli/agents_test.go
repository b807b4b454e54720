package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// A bad agents command line is one line and exit 2, before any fixture
// starts.
func TestAgentsBadCommandLines(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(empty, []byte("\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	spaced := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(spaced, []byte("k1\n\nk3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"agents", "--agents", "0"}, "--agents 0: want 1 to 10000"},
		{[]string{"agents", "--agents", "4", "--projects", "8"}, "--projects 8: want 1 to 64, and no more than --agents"},
		{[]string{"agents", "--contended", "0"}, "--contended 0"},
		{[]string{"agents", "--call", "write=0,search=0"}, "the weights add up to 0"},
		{[]string{"agents", "--path", "mcp"}, `--path "mcp" must start with /`},
		{[]string{"agents", "--fresh-within", "0s"}, "--fresh-within 0s"},
		{[]string{"agents", "--key-file", empty}, "no keys in it"},
		{[]string{"agents", "--key-file", spaced}, "line 2: want one key a line"},
	} {
		probeCmd.BadInput(t, c.args, exitUsage, c.want)
	}
}
