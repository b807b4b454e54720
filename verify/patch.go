package verify

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// Patch is the variant as a unified diff against the module's folder (a/
// and b/ prefixes, so `git apply` or `patch -p1` in the module takes it):
// the user's fix, ready to review.
func (v *Variant) Patch() (string, error) {
	rel, err := filepath.Rel(v.Root, v.File)
	if err != nil {
		return "", err
	}
	rel = filepath.ToSlash(rel)
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        lines(v.Original),
		B:        lines(v.Rewritten),
		FromFile: "a/" + rel,
		ToFile:   "b/" + rel,
		Context:  3,
	})
}

// lines are b's lines, each with its newline. (difflib.SplitLines adds a
// line after the last newline, which no file has: the patch would not apply.)
func lines(b []byte) []string {
	l := strings.SplitAfter(string(b), "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

// WriteOverlay writes the rewritten file and a `go build -overlay` file
// naming it in place of the original into dir; it returns the overlay's
// path. The user's tree is not written.
func (v *Variant) WriteOverlay(dir string) (string, error) {
	replaced := filepath.Join(dir, filepath.Base(v.File))
	if err := os.WriteFile(replaced, v.Rewritten, 0o644); err != nil {
		return "", err
	}
	b, err := json.Marshal(struct{ Replace map[string]string }{map[string]string{v.File: replaced}})
	if err != nil {
		return "", err
	}
	overlay := filepath.Join(dir, "overlay.json")
	return overlay, os.WriteFile(overlay, b, 0o644)
}
