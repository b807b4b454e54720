package shared

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/probehq/probe/report"
)

// outDir is --out, or probe-out/<name>-<time>/ (with -2, -3, … when two
// runs start in the same second).
func outDir(out, name string) string {
	if out != "" {
		return out
	}
	base := filepath.Join("probe-out", name+"-"+time.Now().Format("20060102-150405"))
	dir := base
	for i := 2; ; i++ {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return dir
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
}

// claimOut makes dir ready for a new report before anything is measured.
// A new or empty folder is used as is. One that holds anything else would
// mix an earlier run's profiles into this one's (probe compare would read
// them as this run's): it is refused unless force, which removes exactly
// the files and folders listed in the folder's probe-manifest.json (what
// probe wrote there) and keeps the rest. A folder with no manifest is
// refused even with force: nothing in it is known to be probe's. Either
// way dir is then claimed: what this run writes under it goes in its
// manifest.
func ClaimOut(dir string, force bool) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(entries) == 0 {
		report.Claim(dir)
		return nil
	}
	if err != nil {
		return UsageError{fmt.Sprintf("--out %s: %v", dir, err)}
	}
	if len(entries) == 1 && entries[0].Name() == report.ManifestName {
		force = true // only probe's list: nothing of the user's to mix in
	}
	if !force {
		return UsageError{fmt.Sprintf("--out %s is not empty (it holds %s): choose another folder, or pass --force to clear "+
			"what probe wrote there", dir, entries[0].Name())}
	}
	switch err := report.ClearFolder(dir); {
	case errors.Is(err, report.ErrNoManifest):
		return UsageError{fmt.Sprintf("--out %s holds files probe did not list (it has no %s, so nothing in it is known to be "+
			"probe's): --force clears only what probe wrote; choose another folder, or empty this one yourself", dir, report.ManifestName)}
	case err != nil:
		return UsageError{fmt.Sprintf("--out %s: --force: %v", dir, err)}
	}
	report.Claim(dir)
	return nil
}

// writeAndShow is the write step: the report folder, then report.json
// alone on stdout (--json; the table goes to stderr) or the table and
// where the report's page is.
func writeAndShow(doc report.Document, dir string, asJSON bool, s Streams) error {
	doc, err := report.Bounded(doc)
	if err != nil {
		return err
	}
	if err := report.WriteFolder(dir, doc); err != nil {
		return fmt.Errorf("writing the report: %v", err)
	}
	if asJSON {
		js, err := doc.JSON()
		if err != nil {
			return err
		}
		s.Stdout.Write(js)
		doc.WriteTable(s.Stderr)
		return nil
	}
	doc.WriteTable(s.Stdout)
	fmt.Fprintf(s.Stdout, "report: %s\n", filepath.Join(dir, doc.Page()))
	return nil
}
