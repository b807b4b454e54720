package verify

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// reasonsSource is a module of one file whose marked lines are each a reason
// --verify gives, or a shape it must handle.
const reasonsSource = `package main

import (
	"bytes"
	"regexp"
	"strings"
	"text/template"
	"time"
)

var mutable = "x+"

var fromInit string

func init() { fromInit = "c+" }

func set(s string) { mutable = s }

func dropped() {
	regexp.MustCompile("a+") // hot: dropped
}

func clock() *regexp.Regexp {
	return regexp.MustCompile(time.Now().Format("a+")) // hot: clock
}

func written() *regexp.Regexp {
	return regexp.MustCompile(mutable) // hot: written
}

func initialised() *regexp.Regexp {
	return regexp.MustCompile(fromInit) // hot: init
}

func localConst() *template.Template {
	const page = "{{.}}"
	return template.Must(template.New("p").Parse(page + strings.Repeat("x", 3))) // hot: local const
}

func upper(b []byte) []byte {
	return bytes.ToUpper(b) // hot: unkeyable
}

func triple(s string) (int, int, int) { return len(s), 1, 2 }

func three(s string) int {
	a, b, c := triple("x") // hot: three
	d, _, _ := triple(s)   // hot: three keyed
	return a + b + c + d
}

func first[T any](s []T) []T { return append([]T(nil), s...) }

func generic[T any](s []T) []T {
	return first([]T{}) // hot: generic
}

func fields() []string {
	f := strings.Fields("a b c") // hot: result written
	f[0] = "z"
	return f
}

type box struct{ pat string }

func (b *box) re() *regexp.Regexp { return regexp.MustCompile(b.pat) }

func fresh() *regexp.Regexp {
	b := &box{pat: "a+"}
	return b.re() // hot: fresh
}

type held struct {
	out *strings.Builder
	pat string
}

func note(b *strings.Builder, s string) int {
	b.WriteString(s) // hot: writes into
	return b.Len()
}

func (h *held) record() int {
	return note(h.out, h.pat) // hot: writes into held
}

func main() {
	_, _ = fresh(), (&held{out: &strings.Builder{}}).record()
	_ = generic([]int{1})
	_ = fields()
	set("y")
	dropped()
	_, _, _, _ = clock(), written(), initialised(), localConst()
	_, _ = upper(nil), three("z")
}
`

func reasonsModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{"go.mod": "module example.com/m\n\ngo 1.22\n", "main.go": reasonsSource} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func reasonsSite(t *testing.T, dir, fn, mark, callee string) Site {
	t.Helper()
	for i, l := range strings.Split(reasonsSource, "\n") {
		if strings.HasSuffix(l, "// hot: "+mark) {
			return Site{Callee: callee, Frames: []Frame{{Func: "main." + fn, File: filepath.Join(dir, "main.go"), Line: i + 1}}}
		}
	}
	t.Fatalf("no line marked %q", mark)
	return Site{}
}

// lineOf is the number of the line of reasonsSource that holds text.
func lineOf(t *testing.T, text string) string {
	for i, l := range strings.Split(reasonsSource, "\n") {
		if strings.Contains(l, text) {
			return strconv.Itoa(i + 1)
		}
	}
	t.Fatalf("no line holds %q", text)
	return ""
}

func TestRewriteSaysWhyACallIsNotDoneOnce(t *testing.T) {
	dir := reasonsModule(t)
	for _, c := range []struct {
		fn, mark, callee string
		class            Class
		why              string
	}{
		{"dropped", "dropped", "regexp.MustCompile", LoadTime, "result is dropped"},
		{"clock", "clock", "regexp.MustCompile", LoadTime, "is from time"},
		{"written", "written", "regexp.MustCompile", LoadTime, "`mutable` is assigned at line " + lineOf(t, "mutable = s")},
		{"upper", "unkeyable", "bytes.ToUpper", Cacheable, "[]byte, which is not comparable"},
		{"three", "three", "main.triple", LoadTime, "returns 3 values"},
		{"three", "three keyed", "main.triple", LoadTime, "`s` is a parameter of three"},
		{"fields", "result written", "strings.Fields", LoadTime,
			"`f`, the result, is written at line " + lineOf(t, `f[0] = "z"`)},
		{"generic", "generic", "main.first[go.shape.int]", LoadTime, "depends on a type parameter"},
		// Made afresh on each call: a new address each time, nothing to key by.
		{"fresh", "fresh", "main.(*box).re", LoadTime, "a method on a value made per call: `b` is a pointer"},
		// One frame up from a write into what note is given: a value the
		// server holds, which a memo would stop writing.
		{"record", "writes into held", "", LoadTime, "`h.out` is held by the server and note writes into what it is given"},
	} {
		site := reasonsSite(t, dir, c.fn, c.mark, c.callee)
		if c.fn == "record" {
			inner := reasonsSite(t, dir, "note", "writes into", "strings.(*Builder).WriteString")
			site = Site{Callee: inner.Callee, Frames: append(inner.Frames, Frame{Func: "main.(*held).record",
				File: site.Frames[0].File, Line: site.Frames[0].Line})}
		}
		_, err := Rewrite(dir, site, c.class)
		var nr *NotRewritable
		if !errors.As(err, &nr) || !strings.Contains(nr.Why, c.why) {
			t.Errorf("%s (%s): got %v, want not rewritable because %q", c.mark, c.class, err, c.why)
		}
	}
}

// A variant of each rewritable shape builds, and its patch applied to a copy
// of the source gives the variant's file.
func TestRewrittenShapesBuildAndTheirPatchesApply(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git applies the patch")
	}
	for _, c := range []struct {
		fn, mark, callee string
		class            Class
		form             Form
	}{
		{"initialised", "init", "regexp.MustCompile", LoadTime, Once},
		{"localConst", "local const", "text/template.(*Template).Parse", LoadTime, Once},
		{"three", "three keyed", "main.triple", Cacheable, MemoArgs},
	} {
		t.Run(c.mark, func(t *testing.T) {
			dir := reasonsModule(t)
			v, err := Rewrite(dir, reasonsSite(t, dir, c.fn, c.mark, c.callee), c.class)
			if err != nil {
				t.Fatal(err)
			}
			if v.Form != c.form {
				t.Errorf("form %s, want %s", v.Form, c.form)
			}
			overlay, err := v.WriteOverlay(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := Build(context.Background(), dir, overlay, filepath.Join(t.TempDir(), "bin")); err != nil {
				t.Fatalf("%v\n%s", err, v.Rewritten)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "main.go")); string(got) != reasonsSource {
				t.Fatal("the user's file was written")
			}
			patch, err := v.Patch()
			if err != nil {
				t.Fatal(err)
			}
			apply := exec.Command("git", "apply", "-")
			apply.Dir, apply.Stdin = dir, strings.NewReader(patch)
			if out, err := apply.CombinedOutput(); err != nil {
				t.Fatalf("git apply: %v: %s\n%s", err, out, patch)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "main.go")); string(got) != string(v.Rewritten) {
				t.Errorf("the patched file is not the variant:\n%s", patch)
			}
		})
	}
}

// collideSource names a function sync and imports nothing of that name: the
// variant's sync.OnceValue must come in under a name the file leaves free.
const collideSource = `package main

import "regexp"

func sync() int { return 1 }

func match(s string) bool {
	return regexp.MustCompile("a+b").MatchString(s) // hot: collide
}

func main() { _, _ = sync(), match("ab") }
`

func TestVariantImportsSyncBesideTheUsersOwnSync(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"go.mod": "module example.com/m\n\ngo 1.22\n", "main.go": collideSource} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	line := strings.Count(collideSource[:strings.Index(collideSource, "// hot: collide")], "\n") + 1
	site := Site{Callee: "regexp.MustCompile",
		Frames: []Frame{{Func: "main.match", File: filepath.Join(dir, "main.go"), Line: line}}}
	v, err := Rewrite(dir, site, LoadTime)
	if err != nil {
		t.Fatal(err)
	}
	overlay, err := v.WriteOverlay(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := Build(context.Background(), dir, overlay, filepath.Join(t.TempDir(), "bin")); err != nil {
		t.Fatalf("%v\n%s", err, v.Rewritten)
	}
	if !strings.Contains(string(v.Rewritten), `probesync "sync"`) {
		t.Errorf("the variant does not import sync under a free name:\n%s", v.Rewritten)
	}
}
