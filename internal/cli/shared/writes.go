package shared

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
	"github.com/probehq/probe/probes/web"
)

// writeFlags make a microload read while probe writes notes
// (`--during-writes`): the seeds' reads during a sync.
type WriteFlags struct {
	Rate      float64
	Path      string
	Permalink string
	Freshness time.Duration
}

func (f *WriteFlags) Register(fs *flag.FlagSet) {
	fs.Func("during-writes", "write notes at this rate (2/s, or 0.5) while the reads are measured; needs --rate", func(s string) error {
		v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "/s"), 64)
		if err != nil || !(v > 0 && v <= 100) {
			return fmt.Errorf("%q: want a rate of writes from 0.01/s to 100/s, like 2/s", s)
		}
		f.Rate = v
		return nil
	})
	fs.StringVar(&f.Path, "write-path", "/admin/notes/", "with --during-writes: where a note is PUT (the path inside the vault "+
		"follows), and DELETEd after")
	fs.StringVar(&f.Permalink, "write-permalink", "/{path}", "with --during-writes: the page of a written note ({path}: its "+
		"vault path without .md)")
	fs.DurationVar(&f.Freshness, "freshness-timeout", 30*time.Second, "with --during-writes: how long a change may take to show, "+
		"after the write's reply, before it counts as lost")
}

func (f *WriteFlags) Validate(load LoadFlags) error {
	if f.Rate == 0 {
		return nil
	}
	switch {
	case load.rate == 0:
		return UsageError{"--during-writes needs --rate: reads at a fixed rate (open loop) show a stall, a closed loop hides it"}
	case f.Freshness <= 0 || f.Freshness > time.Hour:
		return UsageError{fmt.Sprintf("--freshness-timeout %v: want more than 0 and at most 1h", f.Freshness)}
	case !strings.HasPrefix(f.Path, "/"):
		return UsageError{fmt.Sprintf("--write-path %q must start with /", f.Path)}
	case !strings.Contains(f.Permalink, "{path}"):
		return UsageError{fmt.Sprintf("--write-permalink %q: want {path} in it", f.Permalink)}
	}
	return nil
}

// writeLoad is the writes to make alongside a run against t: as the keyed
// class when there is a key (the fixture's, when probe started it),
// watched as the readers read.
func (f *WriteFlags) WriteLoad(ctx context.Context, t *probes.Target, key string, fixture bool, timeout time.Duration) *probes.WriteLoad {
	if key == "" && fixture {
		key = fixtures.DefaultKey
	}
	writer := *t
	writer.Header = append(append([]h1.Field{}, t.Header...), h1.Field{Name: "Authorization", Value: "Bearer " + key})
	if key == "" {
		writer.Header = t.Header
	}
	watch := probes.Watch{Permalink: f.Permalink, Timeout: f.Freshness}
	if fixture {
		watch.Sitemap, watch.SearchPath = "/sitemap.xml", "/search"
	} else {
		// Where else a change must show: what the site announces.
		sm := &web.Sitemap{}
		if probes.Prepare(ctx, sm, t, timeout) == nil && len(sm.Sitemaps()) > 0 {
			watch.Sitemap = sm.Sitemaps()[0]
		}
		se := &web.Search{}
		if probes.Prepare(ctx, se, t, timeout) == nil {
			watch.SearchPath, watch.SearchParam = se.Endpoint()
		}
	}
	return &probes.WriteLoad{Target: &writer, Reader: t, Writer: probes.HTTPWriter{Path: f.Path}, Watch: watch, Rate: f.Rate, Timeout: timeout}
}
