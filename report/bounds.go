package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"sort"
	"strings"

	"github.com/probehq/probe/lib/machine"
)

// The slack a measured figure gets over its bound: /proc counts CPU in
// 10 ms ticks, so a core-count over a short window (a ramp's second) may
// read a little high, and so may a share of cores made from one.
const (
	coresSlack = 0.05 // cores, plus 2% of the machine's
	shareSlack = 0.05
)

// OutOfBounds is the warning kind of a figure CheckBounds dropped.
const OutOfBounds = "figure-out-of-bounds"

// CheckBounds finds in a report.json what cannot be: a figure in cores (a
// key ending in "cpu_cores") above the machine's cores or below zero, or a
// share (a key ending in "share") outside 0…1. Such a figure is a bug of
// probe's (a CPU time divided by the wrong window), never the target's,
// and it must not cost the user the rest of the report: it returns the
// report.json with each such figure null, each finding (an element of a
// "findings" list) holding one left out, and a figure-out-of-bounds
// warning naming them; dropped names them, nil when the report is within
// bounds (and js is then returned as it is). The machine's cores are the
// report's machine.cores, else this machine's.
func CheckBounds(js []byte) (out []byte, dropped []string, err error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber() // counts stay exact when the document is written again
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf("probe bug: report.json does not parse: %v", err)
	}
	cores := machine.CPUs()
	top, _ := doc.(map[string]any)
	if m, ok := top["machine"].(map[string]any); ok {
		if n, err := number(m["cores"]); err == nil && n >= 1 {
			cores = int(n)
		}
	}
	check := func(path, key string, v float64) string {
		switch {
		case strings.HasSuffix(key, "cpu_cores") && (v < 0 || v > float64(cores)*1.02+coresSlack):
			return fmt.Sprintf("%s is %.2f cores on a machine of %d", path, v, cores)
		case strings.HasSuffix(key, "share") && (v < -shareSlack || v > 1+shareSlack):
			return fmt.Sprintf("%s is %.1f%%", path, 100*v)
		}
		return ""
	}
	doc = dropOutOfBounds(doc, "", "", check, &dropped)
	if len(dropped) == 0 {
		return js, nil, nil
	}
	sort.Strings(dropped)
	if top != nil {
		w := map[string]any{"kind": OutOfBounds, "message": boundsMessage(dropped)}
		ws, _ := top["warnings"].([]any)
		top["warnings"] = append(ws, w)
	}
	out, err = Marshal(doc)
	return out, dropped, err
}

// boundsMessage is the figure-out-of-bounds warning's text.
func boundsMessage(dropped []string) string {
	return "probe bug: figures that cannot be were left out of report.json (null there; " +
		"do not trust them in report.md or the table): " + strings.Join(dropped, "; ")
}

// number is a JSON number's value.
func number(v any) (float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("not a number")
	}
	return n.Float64()
}

// dropOutOfBounds walks v (its path a.b[2].c, its key key), setting each
// number check names to null and leaving out each finding that holds one;
// it appends what check said to dropped.
func dropOutOfBounds(v any, path, key string, check func(path, key string, v float64) string, dropped *[]string) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if n, err := number(x); err == nil {
				if why := check(p, k, n); why != "" {
					*dropped = append(*dropped, why)
					v[k] = nil
				}
				continue
			}
			v[k] = dropOutOfBounds(x, p, k, check, dropped)
		}
		return v
	case []any:
		kept := v[:0]
		for i, x := range v {
			before := len(*dropped)
			x = dropOutOfBounds(x, fmt.Sprintf("%s[%d]", path, i), "", check, dropped)
			if key == "findings" && len(*dropped) > before {
				(*dropped)[len(*dropped)-1] += " (the finding is left out)"
				continue
			}
			kept = append(kept, x)
		}
		return kept
	}
	return v
}

// Bounded is d with report.json passed through CheckBounds: d itself when
// every figure is within bounds, else d whose report.json is the bounded
// one and whose page, report.md and table open with the warning.
func Bounded(d Document) (Document, error) {
	if b, ok := d.(bounded); ok {
		return b, nil
	}
	js, err := d.JSON()
	if err != nil {
		return nil, err
	}
	out, dropped, err := CheckBounds(js)
	if err != nil || dropped == nil {
		return d, err
	}
	return bounded{Document: d, js: out, warning: boundsMessage(dropped)}, nil
}

// bounded is a Document some of whose figures CheckBounds dropped.
type bounded struct {
	Document
	js      []byte
	warning string
}

func (b bounded) JSON() ([]byte, error) { return b.js, nil }

// Markdown puts the warning under the title.
func (b bounded) Markdown() string {
	md := b.Document.Markdown()
	block := "> **" + OutOfBounds + "**: " + b.warning + "\n\n"
	title, rest, ok := strings.Cut(md, "\n")
	if !ok || !strings.HasPrefix(title, "# ") {
		return block + md
	}
	return title + "\n\n" + block + strings.TrimLeft(rest, "\n")
}

func (b bounded) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "warning %s: %s\n", OutOfBounds, b.warning)
	b.Document.WriteTable(w)
}

// Files puts the warning at the top of report.html.
func (b bounded) Files() (map[string][]byte, error) {
	files, err := b.Document.Files()
	if err != nil {
		return nil, err
	}
	if page, ok := files["report.html"]; ok {
		note := "<p class=\"warning\"><strong>" + OutOfBounds + "</strong>: " + html.EscapeString(b.warning) + "</p>\n"
		if i := bytes.Index(page, []byte("<body>")); i >= 0 {
			i += len("<body>")
			page = append(page[:i:i], append([]byte("\n"+note), page[i:]...)...)
		} else {
			page = append([]byte(note), page...)
		}
		files["report.html"] = page
	}
	return files, nil
}
