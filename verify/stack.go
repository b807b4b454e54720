package verify

import (
	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/frames"
)

// SiteOf is the hot site in one sample's stack (leaf first, as a pprof
// Sample's Location): the innermost of the target's own frames that calls
// into another's code (the standard library or a module), that callee, and
// the own frames around it up to the first that is not own. ok is false for
// a stack with no such frame: work in the target's own code alone, or none
// of its code at all.
func SiteOf(stack []*profile.Location, code frames.Code) (site Site, ok bool) {
	type frame struct {
		fn, file string
		line     int
		own      bool
	}
	var all []frame
	for _, loc := range stack {
		for _, l := range loc.Line { // inlined functions first, their caller last
			if l.Function == nil {
				continue
			}
			all = append(all, frame{l.Function.Name, l.Function.Filename, int(l.Line),
				code.Kind(l.Function.Name, l.Function.Filename) == frames.Own})
		}
	}
	for i := 1; i < len(all); i++ {
		if !all[i].own || all[i-1].own {
			continue
		}
		site.Callee = all[i-1].fn
		for j := i; j < len(all) && all[j].own; j++ {
			site.Frames = append(site.Frames, Frame{Func: all[j].fn, File: all[j].file, Line: all[j].line})
		}
		return site, true
	}
	return Site{}, false
}
