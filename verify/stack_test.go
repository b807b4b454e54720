package verify

import (
	"testing"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/frames"
)

func loc(lines ...profile.Line) *profile.Location { return &profile.Location{Line: lines} }

func line(fn, file string, n int64) profile.Line {
	return profile.Line{Function: &profile.Function{Name: fn, Filename: file}, Line: n}
}

// Inlined frames come first in a Location; the own frames around the site
// stop at the first that is not own (net/http's ServeHTTP).
func TestSiteOfReadsInlinedFramesAndStopsAtForeignCode(t *testing.T) {
	stack := []*profile.Location{
		loc(line("regexp/syntax.(*parser).push", "/go/src/regexp/syntax/parse.go", 300)),
		loc(line("regexp.MustCompile", "/go/src/regexp/regexp.go", 313), line("main.compile", "/src/s/main.go", 20),
			line("main.match", "/src/s/main.go", 30)),
		loc(line("net/http.HandlerFunc.ServeHTTP", "/go/src/net/http/server.go", 2220)),
		loc(line("main.main", "/src/s/main.go", 50)),
	}
	site, ok := SiteOf(stack, frames.Code{})
	if !ok || site.Callee != "regexp.MustCompile" || len(site.Frames) != 2 ||
		site.Frames[0] != (Frame{"main.compile", "/src/s/main.go", 20}) || site.Frames[1].Func != "main.match" {
		t.Errorf("got %+v, %v", site, ok)
	}
	own := []*profile.Location{loc(line("main.spin", "/src/s/main.go", 5)), loc(line("main.main", "/src/s/main.go", 9))}
	if site, ok := SiteOf(own, frames.Code{}); ok {
		t.Errorf("work in own code alone has no library call to rewrite: got %+v", site)
	}
}
