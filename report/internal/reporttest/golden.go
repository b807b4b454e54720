// Package reporttest holds what the report packages' tests share: the
// golden files under report/testdata, compared byte for byte, and the
// histogram a test fills. Tests only; the writer never imports it.
package reporttest

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Golden files hold every report format as it is written: a change to a
// report shows as a diff of report/testdata/*.golden. After a change meant
// to be seen, run `go test ./report/... -run Golden -update` and read the
// diff before committing it.
var update = flag.Bool("update", false, "rewrite report/testdata/*.golden from the reports")

// dir is report/testdata, wherever the test runs from.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata")
}

// Golden compares got with testdata/name.golden (or rewrites it under -update).
func Golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(dir(), name+".golden")
	if *update {
		if err := os.MkdirAll(dir(), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (rerun with -update if the change is meant):\n%s", name, path, diffLines(string(want), got))
	}
}

// GoldenJSON compares a document's report.json with its golden file.
func GoldenJSON(t *testing.T, name string, d interface{ JSON() ([]byte, error) }) {
	t.Helper()
	js, err := d.JSON()
	if err != nil {
		t.Fatal(err)
	}
	Golden(t, name, string(js))
}

// GoldenFormats compares a document's four formats with name.md, name.html,
// name.table and name.json.
func GoldenFormats(t *testing.T, name string, d interface {
	Markdown() string
	HTML() string
	WriteTable(w io.Writer)
	JSON() ([]byte, error)
}) {
	t.Helper()
	Golden(t, name+".md", d.Markdown())
	Golden(t, name+".html", d.HTML())
	Golden(t, name+".table", Table(d))
	GoldenJSON(t, name+".json", d)
}

// Table is what a terminal shows of a document.
func Table(d interface{ WriteTable(w io.Writer) }) string {
	var b strings.Builder
	d.WriteTable(&b)
	return b.String()
}

// NewHistogram is a latency histogram in µs up to five minutes, as the engine keeps.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(5*time.Minute/time.Microsecond), 3)
}

// diffLines shows the first lines that differ.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 8; i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n  want: " + a + "\n  got:  " + c + "\n")
			shown++
		}
	}
	return b.String()
}
