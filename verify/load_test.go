package verify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A profile of a binary built elsewhere, or with -trimpath, names files by
// a path that ends like the module's own.
func TestSourceFileFindsTheModulesFileByItsPathsTail(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"go.mod", "main.go", "api/rules.go", "admin/main.go"} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755)
		os.WriteFile(filepath.Join(root, f), []byte("package x\n"), 0o644)
	}
	for path, want := range map[string]string{
		"example.com/m/api/rules.go":           "api/rules.go", // -trimpath
		"/home/ci/build/m/api/rules.go":        "api/rules.go", // built in another checkout
		"/home/ci/build/m/admin/main.go":       "admin/main.go",
		filepath.Join(root, "api", "rules.go"): "api/rules.go",
	} {
		got, err := sourceFile(root, path)
		if err != nil || got != filepath.Join(root, want) {
			t.Errorf("%s: got %q, %v; want %s", path, got, err, want)
		}
	}
	for _, path := range []string{"/elsewhere/main.go", "other.go"} {
		if got, err := sourceFile(root, path); err == nil {
			t.Errorf("%s: got %s, want an error (ambiguous or absent)", path, got)
		}
	}
}

// A hot site in another package of the module than the main one is found
// and rewritten there.
func TestRewriteFindsASiteInAnotherPackageOfTheModule(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod":        "module example.com/m\n\ngo 1.22\n",
		"cmd/s/main.go": "package main\n\nimport \"example.com/m/api\"\n\nfunc main() { _ = api.Match(\"a\") }\n",
		"api/api.go": "package api\n\nimport \"regexp\"\n\nvar rule = `^a+$`\n\n" +
			"func Match(s string) bool {\n\treturn regexp.MustCompile(rule).MatchString(s) // line 8\n}\n",
	}
	for f, text := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755)
		os.WriteFile(filepath.Join(root, f), []byte(text), 0o644)
	}
	site := Site{Callee: "regexp.MustCompile",
		Frames: []Frame{{Func: "example.com/m/api.Match", File: "example.com/m/api/api.go", Line: 8}}}
	v, err := Rewrite(filepath.Join(root, "cmd", "s"), site, LoadTime)
	if err != nil {
		t.Fatal(err)
	}
	rewritten := strings.Contains(string(v.Rewritten), "probeOnce1()")
	if v.File != filepath.Join(root, "api", "api.go") || v.Form != Once || !rewritten {
		t.Errorf("rewrote %s (%s):\n%s", v.File, v.Form, v.Rewritten)
	}
}

// A package is type-checked once while its files stay as they are, and
// again when one changes: a second finding of the same package costs no
// second go command, and an edited source is never rewritten as it was.
func TestLoadFileKeepsAPackageUntilAFileChanges(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "main.go")
	write := func(src string) {
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "go.mod"), []byte("module m\n\ngo 1.26\n"), 0o644)
	write("package main\n\nfunc main() {}\n")
	first, err := loadFile(root, file)
	if err != nil {
		t.Fatal(err)
	}
	again, err := loadFile(root, file)
	if err != nil || again != first {
		t.Fatalf("the unchanged package was loaded again (%p, then %p, %v)", first, again, err)
	}
	write("package main\n\nfunc main() {}\n\nfunc added() {}\n")
	changed, err := loadFile(root, file)
	if err != nil {
		t.Fatal(err)
	}
	if changed == first || changed.Types.Scope().Lookup("added") == nil {
		t.Errorf("the edited file's package is the one loaded before it (added: %v)", changed.Types.Scope().Lookup("added"))
	}
}
