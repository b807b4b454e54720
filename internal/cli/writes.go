package cli

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/probehq/probe/fixtures"
	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/probes"
)

// writeFlags make a microload read while probe writes notes
// (`--during-writes`): the seeds' reads during a sync.
type writeFlags struct {
	rate      float64
	path      string
	permalink string
	freshness time.Duration
}

func (f *writeFlags) register(fs *flag.FlagSet) {
	fs.Func("during-writes", "write notes at this rate (2/s, or 0.5) while the reads are measured; needs --rate", func(s string) error {
		v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "/s"), 64)
		if err != nil || !(v > 0 && v <= 100) {
			return fmt.Errorf("%q: want a rate of writes from 0.01/s to 100/s, like 2/s", s)
		}
		f.rate = v
		return nil
	})
	fs.StringVar(&f.path, "write-path", "/admin/notes/", "with --during-writes: where a note is PUT (the path inside the vault follows), and DELETEd after")
	fs.StringVar(&f.permalink, "write-permalink", "/{path}", "with --during-writes: the page of a written note ({path}: its vault path without .md)")
	fs.DurationVar(&f.freshness, "freshness-timeout", 30*time.Second, "with --during-writes: how long a change may take to show, after the write's reply, before it counts as lost")
}

func (f *writeFlags) validate(load loadFlags) error {
	if f.rate == 0 {
		return nil
	}
	switch {
	case load.rate == 0:
		return usageError{"--during-writes needs --rate: reads at a fixed rate (open loop) show a stall, a closed loop hides it"}
	case f.freshness <= 0 || f.freshness > time.Hour:
		return usageError{fmt.Sprintf("--freshness-timeout %v: want more than 0 and at most 1h", f.freshness)}
	case !strings.HasPrefix(f.path, "/"):
		return usageError{fmt.Sprintf("--write-path %q must start with /", f.path)}
	case !strings.Contains(f.permalink, "{path}"):
		return usageError{fmt.Sprintf("--write-permalink %q: want {path} in it", f.permalink)}
	}
	return nil
}

// writeLoad is the writes to make alongside a run against t: as the keyed
// class when there is a key (the fixture's, when probe started it),
// watched as the readers read.
func (f *writeFlags) writeLoad(ctx context.Context, t *probes.Target, key string, fixture bool, timeout time.Duration) *probes.WriteLoad {
	if key == "" && fixture {
		key = fixtures.DefaultKey
	}
	writer := *t
	writer.Header = append(append([]h1.Field{}, t.Header...), h1.Field{Name: "Authorization", Value: "Bearer " + key})
	if key == "" {
		writer.Header = t.Header
	}
	watch := probes.Watch{Permalink: f.permalink, Timeout: f.freshness}
	if fixture {
		watch.Sitemap, watch.SearchPath = "/sitemap.xml", "/search"
	} else {
		// Where else a change must show: what the site announces.
		sm := &probes.Sitemap{}
		if probes.Prepare(ctx, sm, t, timeout) == nil && len(sm.Sitemaps()) > 0 {
			watch.Sitemap = sm.Sitemaps()[0]
		}
		se := &probes.Search{}
		if probes.Prepare(ctx, se, t, timeout) == nil {
			watch.SearchPath, watch.SearchParam = se.Endpoint()
		}
	}
	return &probes.WriteLoad{Target: &writer, Reader: t, Writer: probes.HTTPWriter{Path: f.path}, Watch: watch, Rate: f.rate, Timeout: timeout}
}

// withWrites makes o run wl alongside the measured window, keeping each
// request's time (the timeline) and, profiled, one-second CPU windows (to
// align with the syncs).
func withWrites(o probes.LoadOptions, wl *probes.WriteLoad) probes.LoadOptions {
	o.RequestTimes = true
	o.During = wl.Run
	if o.Profile != nil {
		p := *o.Profile
		p.Window = time.Second
		o.Profile = &p
	}
	return o
}
