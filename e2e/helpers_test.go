package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// decodeStdout decodes report.json as probe --json printed it on stdout
// into v; what names the run in the failure.
func decodeStdout(t *testing.T, what, stdout string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(stdout), v); err != nil {
		t.Fatalf("%s: stdout is not report.json: %v\n%.500s", what, err, stdout)
	}
}

// readReportJSON decodes the report.json of the report folder dir into v.
func readReportJSON(t *testing.T, dir string, v any) {
	t.Helper()
	path := filepath.Join(dir, "report.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// goCommand is the go command with args, under the toolchain the module
// names unless the environment names one; env is added to the environment.
func goCommand(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Env = os.Environ()
	if os.Getenv("GOTOOLCHAIN") == "" {
		cmd.Env = append(cmd.Env, "GOTOOLCHAIN=go1.27.3")
	}
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// goBuild builds the package pkg, from the folder dir ("": this one), into
// a program called name in a folder of the test's, and returns its path.
func goBuild(t *testing.T, dir, pkg, name string, env ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	cmd := goCommand(env, "build", "-o", bin, pkg)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", filepath.Join(dir, pkg), err, out)
	}
	return bin
}
