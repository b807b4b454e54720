package verify

import (
	"context"
	"errors"
	"os"
	"os/exec"
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
	// A file beside the module, named through it: not the module's.
	beside := filepath.Join(filepath.Dir(root), filepath.Base(root)+"-beside", "only.go")
	os.MkdirAll(filepath.Dir(beside), 0o755)
	os.WriteFile(beside, []byte("package x\n"), 0o644)
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(beside)) })
	through := root + "/../" + filepath.Base(root) + "-beside/only.go"
	for _, path := range []string{"/elsewhere/main.go", "other.go", through} {
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

// A package-level variable the hot call reads, written by another package
// of the module (main sets api.Rule; api's SetRule sets the Rule main
// reads): never done once. The type-checked package alone shows neither.
func TestAVariableAnotherPackageWritesIsNotLoadTime(t *testing.T) {
	api := "package api\n\nimport \"regexp\"\n\nvar Rule = `^a+$`\n\n" +
		"func Match(s string) bool {\n\treturn regexp.MustCompile(Rule).MatchString(s) // line 8\n}\n"
	setRule := "\nfunc SetRule(r string) { Rule = r }\n"
	for _, c := range []struct {
		name, main, api, hotFunc, hotFile string
		hotLine                           int
		why                               string // empty: done once
	}{
		{"read where it is declared", "package main\n\nimport \"example.com/m/api\"\n\nfunc main() { _ = api.Match(\"a\") }\n",
			api, "example.com/m/api.Match", "api/api.go", 8, ""},
		{"set by main", "package main\n\nimport \"example.com/m/api\"\n\nfunc main() {\n\tapi.Rule = \"b\"\n\t_ = api.Match(\"a\")\n}\n",
			api, "example.com/m/api.Match", "api/api.go", 8, "`Rule` is written by another package, at cmd/s/main.go:6"},
		{"set by its own package", "package main\n\nimport (\n\t\"example.com/m/api\"\n\t\"regexp\"\n)\n\n" +
			"func main() {\n\t_ = regexp.MustCompile(api.Rule) // line 9\n}\n",
			api + setRule, "main.main", "cmd/s/main.go", 9, "`api.Rule` is written at api/api.go:11"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for f, text := range map[string]string{"go.mod": "module example.com/m\n\ngo 1.22\n", "cmd/s/main.go": c.main,
				"api/api.go": c.api} {
				os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755)
				os.WriteFile(filepath.Join(root, f), []byte(text), 0o644)
			}
			site := Site{Callee: "regexp.MustCompile",
				Frames: []Frame{{Func: c.hotFunc, File: "example.com/m/" + c.hotFile, Line: c.hotLine}}}
			v, err := Rewrite(filepath.Join(root, "cmd", "s"), site, LoadTime)
			var nr *NotRewritable
			switch {
			case c.why == "" && (err != nil || v.Form != Once):
				t.Errorf("got %v, %v; want done once", v, err)
			case c.why != "" && (!errors.As(err, &nr) || !strings.Contains(nr.Why, c.why)):
				t.Errorf("got %v, %v; want not rewritable: %s", v, err, c.why)
			}
		})
	}
}

// A name the variant would declare, taken in another file of the package
// by an import's name: the variant takes the next number and builds.
func TestAVariantsNameShunsAnotherFilesImport(t *testing.T) {
	root := t.TempDir()
	for f, text := range map[string]string{
		"go.mod":   "module example.com/m\n\ngo 1.22\n",
		"other.go": "package main\n\nimport probeOnce1 \"strings\"\n\nvar _ = probeOnce1.ToUpper\n",
		"main.go":  "package main\n\nimport \"regexp\"\n\nfunc main() {\n\t_ = regexp.MustCompile(`^a+$`) // line 6\n}\n",
	} {
		os.WriteFile(filepath.Join(root, f), []byte(text), 0o644)
	}
	site := Site{Callee: "regexp.MustCompile", Frames: []Frame{{Func: "main.main", File: "example.com/m/main.go", Line: 6}}}
	v, err := Rewrite(root, site, LoadTime)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(v.Rewritten), "probeOnce2()") {
		t.Errorf("the variant does not shun probeOnce1, another file's import:\n%s", v.Rewritten)
	}
	overlay, err := v.WriteOverlay(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := Build(context.Background(), root, overlay, filepath.Join(t.TempDir(), "s")); err != nil {
		t.Errorf("the variant does not build: %v", err)
	}
}

// A cgo file is compiled as cgo's rewrite of it: said so, not "no package
// holds it".
func TestACgoFileIsSaidSo(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler: go list cannot run cgo here")
	}
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644)
	file := filepath.Join(root, "main.go")
	os.WriteFile(file, []byte("package main\n\n// int one(void) { return 1; }\nimport \"C\"\n\nfunc main() { _ = C.one() }\n"), 0o644)
	_, err := loadFile(root, file)
	if err == nil || !strings.Contains(err.Error(), `imports "C": --verify rewrites no cgo file`) {
		t.Errorf("err %v, want the cgo file named", err)
	}
}
