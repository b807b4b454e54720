package srctarget

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/frames"
	"github.com/probehq/probe/verify"
)

// The hot site comes from the server's own CPU profile, taken under load,
// not from a marked line: the heaviest site of the rules server is its
// per-request compile, which --verify memoises by rule.
func TestTheHotSiteOfARealProfileIsRewritten(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a server and profiles it under load")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := filepath.Join("..", "..", "..", "verify", "testdata", "rules")
	ch := start(ctx, t, dir, "")
	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}

	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for loadCtx.Err() == nil {
				if resp, err := client.Get(ch.URL + "/rules?q=select+a+from+b"); err == nil {
					resp.Body.Close()
				}
			}
		})
	}
	resp, err := client.Get(ch.URL + "/debug/pprof/profile?seconds=2")
	stopLoad()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}

	weight := map[string]int64{}
	sites := map[string]verify.Site{}
	for _, s := range p.Sample {
		site, ok := verify.SiteOf(s.Location, frames.Code{})
		if !ok {
			continue
		}
		f := site.Frames[0]
		key := fmt.Sprintf("%s %s %s:%d", site.Callee, f.Func, f.File, f.Line)
		weight[key] += s.Value[len(s.Value)-1]
		sites[key] = site
	}
	var heaviest string
	for k, w := range weight {
		if heaviest == "" || w > weight[heaviest] {
			heaviest = k
		}
	}
	if heaviest == "" {
		t.Fatal("no sample of the profile has a site in the server's own code")
	}
	site := sites[heaviest]
	want := frameAt(t, dir, "match", "rules")
	if got := site.Frames[0]; got.Line != want.Line || got.Func != want.Func {
		t.Fatalf("the heaviest site is %s calling %s at line %d, want %s at line %d (the compile)", got.Func,
			site.Callee, got.Line, want.Func, want.Line)
	}
	v, err := verify.Rewrite(dir, site, verify.LoadTime)
	if err != nil {
		t.Fatal(err)
	}
	if v.Form != verify.MemoRange {
		t.Errorf("form %s, want %s", v.Form, verify.MemoRange)
	}
	t.Logf("heaviest site: %s at %s:%d, %.0f%% of the profile's CPU; %s", site.Callee, filepath.Base(site.Frames[0].File),
		site.Frames[0].Line, 100*float64(weight[heaviest])/float64(total(p)), v.Form)
}

func total(p *profile.Profile) int64 {
	var n int64
	for _, s := range p.Sample {
		n += s.Value[len(s.Value)-1]
	}
	return n
}
