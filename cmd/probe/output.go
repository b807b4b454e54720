package main

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"probe/analyzers"
)

// shownReport is what a command writes to its report folder and shows.
type shownReport interface {
	WriteFolder(dir string) error
	JSON() []byte
	WriteTable(w io.Writer)
}

// outDir is --out, or probe-out/<name>-<time>/.
func outDir(out, name string) string {
	if out != "" {
		return out
	}
	return filepath.Join("probe-out", name+"-"+time.Now().Format("20060102-150405"))
}

// writeAndShow writes rep's folder, then prints report.json alone on
// stdout (--json; the table goes to stderr) or the table and where the
// report's page is.
func writeAndShow(rep shownReport, dir, page string, asJSON bool, stdout, stderr io.Writer) error {
	if err := rep.WriteFolder(dir); err != nil {
		return fmt.Errorf("writing the report: %v", err)
	}
	if asJSON {
		stdout.Write(rep.JSON())
		rep.WriteTable(stderr)
		return nil
	}
	rep.WriteTable(stdout)
	fmt.Fprintf(stdout, "report: %s\n", filepath.Join(dir, page))
	return nil
}

// rulesOf is the analyzers' catalog, or --rules FILE's.
func rulesOf(file string) ([]analyzers.Rule, error) {
	if file == "" {
		return analyzers.DefaultRules(), nil
	}
	rules, err := analyzers.LoadRules(file)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	return rules, nil
}
