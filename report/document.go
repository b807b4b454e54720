// Package report turns finished data — a run with its analysis, a suite of
// runs, and through the kinds beside it (report/abreport, fuzzreport,
// rampreport, shardreport, wsreport, agentsreport) a before/after
// comparison, a fuzz run, a ramp, a merge — into report.json (the
// schemas in docs/DESIGN.md), report.md, report.html, the terminal table
// and the files beside them. It formats and writes; it does not measure or
// analyse: the command's pipeline hands it what the stages produced.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Document is one kind of report. Each kind is its own type; the writer
// and the command treat them alike through this interface.
type Document interface {
	// JSON is report.json.
	JSON() ([]byte, error)
	// Markdown is report.md.
	Markdown() string
	// WriteTable prints what a terminal shows.
	WriteTable(w io.Writer)
	// Files are the other files of the report folder by relative path
	// (profiles, flame graphs, latency distributions, crashers, pages).
	Files() (map[string][]byte, error)
	// Page is the file a reader should open: report.md or report.html.
	Page() string
}

// Threshold is a --fail-on expression and what the run made of it.
type Threshold struct {
	Expr     string   `json:"expr"`
	Broken   bool     `json:"broken"`
	Breaches []string `json:"breaches,omitempty"`
}

// WriteThresholds is report.md's Thresholds section.
func WriteThresholds(b *strings.Builder, ts []Threshold) {
	if len(ts) == 0 {
		return
	}
	b.WriteString("\n## Thresholds\n\n")
	for _, t := range ts {
		verdict := "holds"
		if t.Broken {
			verdict = "**broken**: " + strings.Join(t.Breaches, "; ")
		}
		fmt.Fprintf(b, "- `%s` %s\n", t.Expr, verdict)
	}
}

// ListThresholds ends the terminal table.
func ListThresholds(w io.Writer, ts []Threshold) {
	for _, t := range ts {
		if t.Broken {
			fmt.Fprintf(w, "  threshold %s broken: %s\n", t.Expr, strings.Join(t.Breaches, "; "))
		} else {
			fmt.Fprintf(w, "  threshold %s holds\n", t.Expr)
		}
	}
}

// Marshal is report.json's encoding: indented, ending in a newline; an
// error (a value JSON cannot hold) is returned, never an empty file.
func Marshal(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding report.json: %v", err)
	}
	return append(b, '\n'), nil
}

// PageFiles are a report folder's files: report.html, page, and the
// files drawn beside it (profiles, flame graphs), in a map of their own.
func PageFiles(page string, files map[string][]byte) map[string][]byte {
	out := map[string][]byte{"report.html": []byte(page)}
	maps.Copy(out, files)
	return out
}

// WriteFolder writes d's report.json, report.md and files to dir, the
// figures that cannot be left out (Bounded). Each
// file is written under a temporary name, synced and renamed into place,
// so an interrupted write never leaves half a report. Every file is first
// listed in the manifest of dir (or of the claimed report folder holding
// dir): --force clears what the manifest lists and nothing else.
func WriteFolder(dir string, d Document) error {
	d, err := Bounded(d)
	if err != nil {
		return err
	}
	files, err := d.Files()
	if err != nil {
		return err
	}
	js, err := d.JSON()
	if err != nil {
		return err
	}
	files["report.json"] = js
	files["report.md"] = []byte(d.Markdown())
	names := make([]string, 0, len(files))
	for name := range files {
		if err := manifestEntry(name); err != nil {
			return fmt.Errorf("report file %v", err)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	root, below := manifestRoot(dir)
	listed := make([]string, len(names))
	for i, name := range names {
		listed[i] = path.Join(below, name)
	}
	if err := record(root, listed); err != nil {
		return fmt.Errorf("%s: %v", ManifestName, err)
	}
	for _, name := range names {
		if err := WriteFileAtomic(filepath.Join(dir, filepath.FromSlash(name)), files[name]); err != nil {
			return err
		}
	}
	return nil
}

// WriteFileAtomic writes b to a temporary file beside path, syncs it and
// renames it: an interrupted write never leaves half a file.
func WriteFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
