package analyzers

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// stack is one sample as analyzers see it: function names leaf first
// (inlined calls expanded) and the sample's value.
type stack struct {
	funcs   []string
	files   []string
	value   int64
	serving bool // under net/http's conn.serve: request handling
}

// stacks flattens p's samples at the value index named typ (the last index
// when typ is empty or absent).
func stacks(p *profile.Profile, typ string) ([]stack, int64) {
	if p == nil {
		return nil, 0
	}
	idx := len(p.SampleType) - 1
	for i, st := range p.SampleType {
		if st.Type == typ {
			idx = i
		}
	}
	out := make([]stack, 0, len(p.Sample))
	var total int64
	for _, s := range p.Sample {
		v := s.Value[idx]
		if v == 0 {
			continue
		}
		st := stack{value: v}
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function != nil {
					st.funcs = append(st.funcs, line.Function.Name)
					st.files = append(st.files, line.Function.Filename)
				}
			}
		}
		if measuring(st.funcs) {
			continue
		}
		out = append(out, st)
		total += v
	}
	return out, total
}

// measurementPkgs serve the profiles probe fetches while it measures:
// their work (gzip of every profile served, fgprof's stack walks) is the
// cost of being measured, not the target's, and a cheap endpoint would
// otherwise show repeated gzip under /debug/pprof as its own.
var measurementPkgs = []string{"net/http/pprof.", "runtime/pprof.", "github.com/felixge/fgprof."}

func measuring(funcs []string) bool {
	for _, fn := range funcs {
		for _, p := range measurementPkgs {
			if strings.HasPrefix(fn, p) {
				return true
			}
		}
	}
	return false
}

// ValueTypes lists a profile's sample types, for error messages.
func ValueTypes(p *profile.Profile) []string {
	var ts []string
	for _, st := range p.SampleType {
		ts = append(ts, st.Type)
	}
	return ts
}

// pkgPath is the import path of a function name such as
// "probe/fixtures/site.(*snapshot).walkFeeds" or "compress/flate.NewWriter".
func pkgPath(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot < 0 {
		return fn
	}
	return fn[:slash+1+dot]
}

// CodeKind is codeKind for other packages (flame graphs colour by it).
func CodeKind(fn, file string) string { return codeKind(fn, file) }

// codeKind tells the target's own code from the standard library and
// third-party modules: by the first path element (a domain has a dot) and,
// for dotless paths, by whether the file lies in GOROOT/src.
func codeKind(fn, file string) string {
	pkg := pkgPath(fn)
	first, _, _ := strings.Cut(pkg, "/")
	switch {
	case strings.Contains(first, "."), strings.Contains(file, "/pkg/mod/"):
		return "third-party"
	case strings.HasPrefix(pkg, "runtime") || strings.HasPrefix(pkg, "internal/runtime"):
		return "runtime"
	case file == "" || strings.Contains(file, "/src/"+pkg+"/"):
		return "std"
	}
	return "own"
}

// cheapStd are standard packages whose cost under a loop is the loop's: a
// walk that formats, sorts and fills maps is still the walk.
var cheapStd = map[string]bool{"sort": true, "strings": true, "strconv": true, "time": true, "bytes": true, "unicode": true,
	"unicode/utf8": true, "maps": true, "slices": true, "sync": true, "sync/atomic": true, "math": true, "fmt": true, "path": true}

func share(part, total int64) float64 {
	if total == 0 {
		return 0
	}
	return float64(part) / float64(total)
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }

// CPUTime is the CPU time a CPU profile sampled.
func CPUTime(p *profile.Profile) time.Duration {
	_, total := stacks(p, "cpu")
	return time.Duration(total)
}
