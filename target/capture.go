package target

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/pprofio"
	"github.com/probehq/probe/lib/redirect"
	"github.com/probehq/probe/result"
)

// pprofClient fetches the target's profiles: a 3xx is refused, never
// followed (lib/redirect), and the error names its Location.
var pprofClient = &http.Client{CheckRedirect: redirect.Refuse("the pprof fetch")}

// ProfileOptions turn on continuous profiling of the target during the
// measured window, from its net/http/pprof endpoints (and fgprof's, when it
// has one).
type ProfileOptions struct {
	PprofURL  *url.URL      // the target's /debug/pprof/ (trailing slash)
	FgprofURL *url.URL      // the target's /debug/fgprof; nil: none
	Window    time.Duration // length of one CPU window (default 5s)
	Slack     time.Duration // a fetch may take its seconds plus this (default 20s)
	// LeakSettle is the wait after the window before the goroutines are
	// counted again, when the target serves no leak profile (default 2s).
	LeakSettle time.Duration
	// MaxProfile bounds each profile as read and as decompressed
	// (0: pprofio.DefaultLimit).
	MaxProfile int64
	// Reading, when set, is the target's CPU so far and the requests
	// answered so far (ok: both could be read). The CPU windows are then
	// separated by unprofiled gaps of Gap (default 1s), and what each
	// stretch cost is Profiles.Cost: the run measures what profiling costs.
	Reading func() (cpu time.Duration, answered int64, ok bool)
	// Gap is the unprofiled gaps' length (0: 1s); negative: the windows
	// stay back to back (a run whose windows must cover every second, as
	// reads during writes, whose syncs a gap would miss).
	Gap time.Duration
	// invalid hears of the samples a fetched profile dropped as invalid
	// (pprofio.DropInvalid); nil: they are dropped unsaid.
	invalid func(path, dropped string)
}

// IsTimeout says whether err is a request that got no answer in time.
func IsTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// CheckPprof says why url cannot serve profiles, or nil.
func CheckPprof(ctx context.Context, u *url.URL) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", u.String(), nil)
	resp, err := pprofClient.Do(req)
	if e := redirect.As(err); e != nil {
		return fmt.Errorf("%s: %w", u, e)
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("profile")) {
		return fmt.Errorf("%s answers %d without the pprof index", u, resp.StatusCode)
	}
	return nil
}

// CaptureProfiles profiles the target for d, a run's measured window:
// consecutive CPU windows, the allocation delta and the wall-clock profile
// at once, goroutines at the end, and the goroutines leaked in between
// (target/leak.go). A fetch that fails or times out is a
// warning; the load goes on.
func CaptureProfiles(ctx context.Context, o ProfileOptions, d time.Duration) *result.Profiles {
	if o.Window <= 0 {
		o.Window = 5 * time.Second
	}
	if o.Slack <= 0 {
		o.Slack = 20 * time.Second
	}
	if o.Gap == 0 {
		o.Gap = time.Second
	}
	if o.Gap < 0 {
		o.Reading = nil
	}
	p := &result.Profiles{Raw: map[string][]byte{}}
	var mu sync.Mutex
	warn := func(kind, format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		p.Warnings = append(p.Warnings, result.Warning{Kind: kind, Message: fmt.Sprintf(format, args...)})
	}
	keep := func(name string, raw []byte) {
		mu.Lock()
		defer mu.Unlock()
		p.Raw[name] = raw
	}
	o.invalid = func(path, dropped string) { warn("profile-invalid", "%s: %s", path, dropped) }
	secs := int(math.Max(1, math.Round(d.Seconds())))
	leaksEnd := make(chan func() *result.Leaks, 1)
	go func() { leaksEnd <- startLeaks(ctx, o, warn) }()
	var wg sync.WaitGroup
	legs := newCostLegs(o)
	wg.Go(func() { // CPU windows, back to back or taking turns with unprofiled gaps
		deadline := time.Now().Add(d)
		for i := 0; ctx.Err() == nil; i++ {
			w := min(o.Window, time.Until(deadline))
			if w < 500*time.Millisecond {
				return
			}
			legs.start()
			prof, raw, err := fetchProfile(ctx, o.PprofURL, "profile", seconds(int(math.Max(1, math.Round(w.Seconds())))), o)
			if err != nil {
				warn("profile-fetch", "CPU window %d: %v", i+1, err)
				mu.Lock()
				p.CPUWindowError = fmt.Errorf("CPU window %d: %w", i+1, err)
				mu.Unlock()
				return
			}
			keep(fmt.Sprintf("cpu-window-%02d.pb.gz", i+1), raw)
			mu.Lock()
			p.Windows = append(p.Windows, prof)
			mu.Unlock()
			if legs != nil && time.Until(deadline) >= settleAfterWindow+o.Gap+time.Second {
				// A gap between this window and the next. The window's
				// stretch ends a moment after the fetch: the target's
				// writing of the profile is the profiling's cost too.
				time.Sleep(settleAfterWindow)
				legs.end(true)
				legs.gap(ctx, o.Gap)
			} else {
				legs.end(true)
			}
		}
	})
	wg.Go(func() {
		prof, raw, exact, err := allocationWindow(ctx, o, d)
		if err != nil {
			warn("profile-fetch", "allocations: %v", err)
			return
		}
		if !exact {
			warn("allocs-approximate", "the target's heap profile cannot be taken after a GC (heap?gc=1): the allocation delta "+
				"is as of the last GC at each end, and may hold some of an earlier run's allocations")
		}
		keep("allocs.pb.gz", raw)
		p.Allocs = prof
	})
	if o.FgprofURL != nil {
		wg.Go(func() {
			prof, raw, err := fetchProfile(ctx, o.FgprofURL, "", url.Values{"seconds": {fmt.Sprint(secs)}, "format": {"pprof"}}, o)
			if err != nil {
				if strings.Contains(err.Error(), "status 404") || strings.Contains(err.Error(), "parsing profile") {
					warn("no-fgprof", "the target has no /debug/fgprof (it answered without a profile): no wall-clock profile")
				} else {
					warn("profile-fetch", "wall-clock (fgprof): %v", err)
				}
				return
			}
			keep("wall.pb.gz", raw)
			p.Wall = prof
		})
	}
	wg.Wait()
	p.Cost = legs.cost()
	if prof, raw, err := fetchProfile(context.WithoutCancel(ctx), o.PprofURL, "goroutine", nil, o); err == nil {
		keep("goroutine.pb.gz", raw)
		p.Goroutine = prof
	} else {
		p.Unanswered = p.CPUWindowError != nil
	}
	if !p.Unanswered {
		p.Leaks = (<-leaksEnd)()
	}
	if len(p.Windows) > 0 {
		merged, err := profile.Merge(p.Windows)
		if err != nil {
			warn("profile-fetch", "merging CPU windows: %v", err)
		} else {
			p.CPU = merged
			var b bytes.Buffer
			if merged.Write(&b) == nil {
				p.Raw["cpu.pb.gz"] = b.Bytes()
			}
		}
	}
	return p
}

// allocationWindow is what the target allocated during the next d: the
// heap profile is as of the last completed GC, so a delta between two
// plain snapshots is stale by up to a GC cycle at each end (an earlier
// run's allocations show in the next). A GC before each snapshot (gc=1)
// makes both ends exact. Targets that refuse gc=1 get the delta endpoint
// (allocs?seconds=), and exact is false.
func allocationWindow(ctx context.Context, o ProfileOptions, d time.Duration) (prof *profile.Profile, raw []byte, exact bool, err error) {
	gc := url.Values{"gc": {"1"}}
	start, _, err := fetchProfile(ctx, o.PprofURL, "heap", gc, o)
	if err != nil {
		secs := int(math.Max(1, math.Round(d.Seconds())))
		prof, raw, err := fetchProfile(ctx, o.PprofURL, "allocs", seconds(secs), o)
		return prof, raw, false, err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done(): // the run ended early: the window ends with it
	}
	end, _, err := fetchProfile(context.WithoutCancel(ctx), o.PprofURL, "heap", gc, o)
	if err != nil {
		return nil, nil, false, err
	}
	start.Scale(-1)
	delta, err := profile.Merge([]*profile.Profile{start, end})
	if err != nil {
		return nil, nil, false, fmt.Errorf("the delta of two heap profiles: %v", err)
	}
	delta.TimeNanos, delta.DurationNanos = end.TimeNanos, end.TimeNanos+end.DurationNanos-start.TimeNanos
	var b bytes.Buffer
	if err := delta.Write(&b); err != nil {
		return nil, nil, false, err
	}
	return delta, b.Bytes(), true, nil
}

func seconds(n int) url.Values { return url.Values{"seconds": {fmt.Sprint(n)}} }

// fetchProfile gets one profile; name is the pprof profile ("profile",
// "heap", …) or empty for fgprof's URL as given. A "seconds" query gives
// the fetch that much longer.
func fetchProfile(ctx context.Context, base *url.URL, name string, query url.Values, o ProfileOptions) (*profile.Profile, []byte, error) {
	var prof *profile.Profile
	var raw []byte
	err := fetchPprof(ctx, base, name, query, o, func(path string, body io.Reader) error {
		// The target is not trusted: an endless reply or a gzip bomb is this
		// fetch's error, not probe's end.
		var invalid string
		var err error
		prof, raw, invalid, err = pprofio.Read(body, o.MaxProfile)
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		if invalid != "" && o.invalid != nil {
			o.invalid(path, invalid)
		}
		return nil
	})
	return prof, raw, err
}

// fetchPprof gets one of the target's pprof pages and gives its body to
// read (a 200 only; a 3xx is refused).
func fetchPprof(ctx context.Context, base *url.URL, name string, query url.Values, o ProfileOptions,
	read func(path string, body io.Reader) error) error {
	u := *base
	if name != "" {
		u = *base.JoinPath(name)
	}
	q := u.Query()
	for k, v := range query {
		q[k] = v
	}
	u.RawQuery = q.Encode()
	wait := o.Slack
	if s, err := strconv.Atoi(q.Get("seconds")); err == nil {
		wait += time.Duration(s) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", u.String(), nil)
	resp, err := pprofClient.Do(req)
	if e := redirect.As(err); e != nil {
		return fmt.Errorf("%s: %w", u.Path, e)
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return fmt.Errorf("%s: status %d: %s", u.Path, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return read(u.Path, resp.Body)
}
