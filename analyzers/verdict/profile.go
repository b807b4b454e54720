package verdict

import (
	"regexp"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/frames"
)

// work is one function's CPU in a profile.
type work struct {
	nanos        int64
	samples      int
	readsRequest bool // a request reader or form parser ran below it
}

// requestReaders are functions that read the request as a handler runs.
var requestReaders = regexp.MustCompile(`^net/http\.\(\*body\)\.Read|` +
	`^net/http\.\(\*Request\)\.(ParseForm|ParseMultipartForm|FormValue|PostFormValue|MultipartReader)|` +
	`^net/http\.\(\*http2requestBody\)\.Read|^mime/multipart\.`)

// workOf is the CPU of the samples with fn (a display name) on their stack.
func workOf(p *profile.Profile, fn string) work {
	var w work
	idx := cpuIndex(p)
	for _, s := range p.Sample {
		at := -1
		reads, assist := false, false
		for li, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function == nil {
					continue
				}
				name := frames.DisplayName(line.Function.Name)
				if at < 0 && requestReaders.MatchString(name) {
					reads = true
				}
				if at < 0 && strings.HasPrefix(name, "runtime.gcAssistAlloc") {
					assist = true
				}
				if name == fn && at < 0 {
					at = li
				}
			}
		}
		// GC assists are the collector's work, charged to whatever
		// allocates when it runs behind: noise to a comparison of work.
		if at >= 0 && !assist {
			w.nanos += s.Value[idx]
			w.samples++
			w.readsRequest = w.readsRequest || reads
		}
	}
	return w
}

// CPUOf is the CPU nanoseconds of p's samples (all of them when keep is nil).
func CPUOf(p *profile.Profile, keep func(*profile.Sample) bool) int64 {
	idx := cpuIndex(p)
	var n int64
	for _, s := range p.Sample {
		if keep == nil || keep(s) {
			n += s.Value[idx]
		}
	}
	return n
}

func cpuIndex(p *profile.Profile) int {
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			return i
		}
	}
	return len(p.SampleType) - 1
}
