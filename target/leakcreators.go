package target

import (
	"bufio"
	"context"
	"io"
	"net/url"
	"strings"

	"github.com/probehq/probe/lib/pprofio"
)

// leakCreators reads the target's goroutine dump (goroutineleak?debug=2,
// all goroutines as a panic prints them, the leaked ones marked
// "(leaked)") for what the leak profile has not: the function whose go
// statement started each leaked goroutine. It maps the leaked
// goroutine's entry function to its creator, both as the dump names
// them; a dump past the profile bound is read up to it.
func leakCreators(ctx context.Context, o ProfileOptions) (map[string]string, error) {
	limit := o.MaxProfile
	if limit <= 0 {
		limit = pprofio.DefaultLimit
	}
	creators := map[string]string{}
	err := fetchPprof(ctx, o.PprofURL, "goroutineleak", url.Values{"debug": {"2"}}, o,
		func(_ string, body io.Reader) error {
			sc := bufio.NewScanner(io.LimitReader(body, limit))
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			leaked, entry := false, ""
			for sc.Scan() {
				line := sc.Text()
				switch {
				case strings.HasPrefix(line, "goroutine "):
					leaked, entry = strings.Contains(line, "(leaked)"), ""
				case !leaked || strings.HasPrefix(line, "\t"):
				case strings.HasPrefix(line, "created by "):
					by, _, _ := strings.Cut(strings.TrimPrefix(line, "created by "), " in goroutine ")
					if entry != "" && by != "" {
						creators[entry] = by
					}
				default:
					entry = dumpFunc(line)
				}
			}
			return sc.Err()
		})
	return creators, err
}

// dumpFunc is the function of a dump's frame line: "pkg.f(0x1, …)" or
// "pkg.(*T).m(...)" is "pkg.f", "pkg.(*T).m".
func dumpFunc(line string) string {
	if !strings.HasSuffix(line, ")") {
		return line
	}
	if i := strings.LastIndexByte(line, '('); i > 0 {
		return line[:i]
	}
	return line
}
