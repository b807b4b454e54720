package main

import (
	"fmt"
	"path/filepath"
	"time"

	"probe/analyzers/report"
)

// outDir is --out, or probe-out/<name>-<time>/.
func outDir(out, name string) string {
	if out != "" {
		return out
	}
	return filepath.Join("probe-out", name+"-"+time.Now().Format("20060102-150405"))
}

// writeAndShow is the write step: the report folder, then report.json
// alone on stdout (--json; the table goes to stderr) or the table and
// where the report's page is.
func writeAndShow(doc report.Document, dir string, asJSON bool, s streams) error {
	if err := report.WriteFolder(dir, doc); err != nil {
		return fmt.Errorf("writing the report: %v", err)
	}
	if asJSON {
		js, err := doc.JSON()
		if err != nil {
			return err
		}
		s.stdout.Write(js)
		doc.WriteTable(s.stderr)
		return nil
	}
	doc.WriteTable(s.stdout)
	fmt.Fprintf(s.stdout, "report: %s\n", filepath.Join(dir, doc.Page()))
	return nil
}
