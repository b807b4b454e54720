package report

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/probehq/probe/probes"
)

// The slack a measured figure gets over its bound: /proc counts CPU in
// 10 ms ticks, so a core-count over a short window (a ramp's second) may
// read a little high, and so may a share of cores made from one.
const (
	coresSlack = 0.05 // cores, plus 2% of the machine's
	shareSlack = 0.05
)

// CheckBounds refuses a report.json that says what cannot be: a figure in
// cores (a key ending in "cpu_cores") above the machine's cores or below
// zero, or a share (a key ending in "share") outside 0…1. Such a figure is
// a bug of probe's (a CPU time divided by the wrong window), never the
// target's: the report is not written, and the error names each figure.
// The machine's cores are the report's machine.cores, else this machine's.
func CheckBounds(js []byte) error {
	var doc any
	if err := json.Unmarshal(js, &doc); err != nil {
		return fmt.Errorf("probe bug: report.json does not parse: %v", err)
	}
	cores := probes.MachineCPUs()
	if top, ok := doc.(map[string]any); ok {
		if m, ok := top["machine"].(map[string]any); ok {
			if n, ok := m["cores"].(float64); ok && n >= 1 {
				cores = int(n)
			}
		}
	}
	var bad []string
	walkNumbers(doc, "", func(path, key string, v float64) {
		switch {
		case strings.HasSuffix(key, "cpu_cores"):
			if v < 0 || v > float64(cores)*1.02+coresSlack {
				bad = append(bad, fmt.Sprintf("%s is %.2f cores on a machine of %d", path, v, cores))
			}
		case strings.HasSuffix(key, "share"):
			if v < -shareSlack || v > 1+shareSlack {
				bad = append(bad, fmt.Sprintf("%s is %.1f%%", path, 100*v))
			}
		}
	})
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return fmt.Errorf("probe bug, the report is not written: it would say what cannot be: %s", strings.Join(bad, "; "))
}

// boundedJSON is d's report.json when CheckBounds passes it: what
// WriteFolder writes.
func boundedJSON(d Document) ([]byte, error) {
	js, err := d.JSON()
	if err != nil {
		return nil, err
	}
	return js, CheckBounds(js)
}

// walkNumbers calls f on each number in v with its path (a.b[2].c) and key.
func walkNumbers(v any, path string, f func(path, key string, v float64)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if n, ok := x.(float64); ok {
				f(p, k, n)
				continue
			}
			walkNumbers(x, p, f)
		}
	case []any:
		for i, x := range v {
			walkNumbers(x, fmt.Sprintf("%s[%d]", path, i), f)
		}
	}
}
