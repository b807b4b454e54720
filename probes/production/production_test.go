package production

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/internal/enginetest"
)

var sink uint64

// spin burns CPU in a function of its own name, for a profile to show.
// spinEU and spinUS burn d of this process's CPU (not of wall time: on a
// busy machine, under the race detector, a wall-time spin can be left
// with no CPU sample at all).
func spinEU(d time.Duration) {
	for end := processCPU() + d; processCPU() < end; {
		for i := 0; i < 1e5; i++ {
			sink += uint64(i) * 7
		}
	}
}

func spinUS(d time.Duration) {
	for end := processCPU() + d; processCPU() < end; {
		for i := 0; i < 1e5; i++ {
			sink += uint64(i) * 11
		}
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuProfile is a real CPU profile of work.
func cpuProfile(t *testing.T, work func()) *profile.Profile {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.StartCPUProfile(&b); err != nil {
		t.Fatal(err)
	}
	work()
	pprof.StopCPUProfile()
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// engines serves one store as both engines.
func engines(t *testing.T) (*enginetest.Store, map[string]*Source, time.Time) {
	t.Helper()
	now := time.Now().Truncate(time.Second)
	st := &enginetest.Store{}
	eu := cpuProfile(t, func() { spinEU(300 * time.Millisecond) })
	us := cpuProfile(t, func() { spinUS(300 * time.Millisecond) })
	for _, svc := range []string{"shop"} {
		st.Add(enginetest.Entry{Name: "process_cpu", Time: now.Add(-30 * time.Minute), Profile: eu,
			Labels: map[string]string{"service_name": svc, "job": svc, "region": "eu"}})
		st.Add(enginetest.Entry{Name: "process_cpu", Time: now.Add(-20 * time.Minute), Profile: us,
			Labels: map[string]string{"service_name": svc, "job": svc, "region": "us"}})
	}
	st.Add(enginetest.Entry{Name: "process_cpu", Time: now.Add(-10 * time.Minute), Profile: us,
		Labels: map[string]string{"service_name": "cart", "job": "cart"}})
	sources := map[string]*Source{}
	for engine, h := range map[string]http.Handler{Pyroscope: st.Pyroscope(), Parca: st.Parca()} {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		src, err := ParseSource(engine + "://" + strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		sources[engine] = src
	}
	return st, sources, now
}

func has(p *profile.Profile, fn string) bool {
	for _, f := range p.Function {
		if strings.HasSuffix(f.Name, fn) {
			return true
		}
	}
	return false
}

// The merged profile honours the label selector and the time range, on
// both engines' protocols.
func TestFetchHonoursSelectorAndRange(t *testing.T) {
	_, sources, now := engines(t)
	for engine, src := range sources {
		ctx := context.Background()
		all, err := src.Fetch(ctx, Query{Service: "shop", Start: now.Add(-time.Hour), End: now})
		if err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		if !has(all, "spinEU") || !has(all, "spinUS") || len(all.SampleType) != 1 || all.SampleType[0].Type != "cpu" {
			t.Errorf("%s: the hour's merge lacks a region or is not CPU: %v", engine, all.SampleType)
		}
		eu, err := src.Fetch(ctx, Query{Service: "shop", Labels: `{region="eu"}`, Start: now.Add(-time.Hour), End: now})
		if err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		if !has(eu, "spinEU") || has(eu, "spinUS") {
			t.Errorf("%s: region=\"eu\" did not select the eu profile alone", engine)
		}
		late, err := src.Fetch(ctx, Query{Service: "shop", Start: now.Add(-25 * time.Minute), End: now})
		if err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		if has(late, "spinEU") || !has(late, "spinUS") {
			t.Errorf("%s: the last 25 minutes hold the us profile alone", engine)
		}
		// No allocation profile was stored: the service is known, the type
		// has no samples.
		_, err = src.Fetch(ctx, Query{Service: "shop", Type: "alloc", Start: now.Add(-time.Hour), End: now})
		if !errors.Is(err, ErrNoSamples) {
			t.Errorf("%s: alloc: %v, want no samples", engine, err)
		}
		_, err = src.Fetch(ctx, Query{Service: "shop", Start: now.Add(-5 * time.Minute), End: now})
		if !errors.Is(err, ErrNoSamples) {
			t.Errorf("%s: an empty range: %v, want no samples", engine, err)
		}
		_, err = src.Fetch(ctx, Query{Service: "shp", Start: now.Add(-time.Hour), End: now})
		var unknown *UnknownServiceError
		if !errors.As(err, &unknown) || !strings.Contains(err.Error(), "services it has: cart, shop") {
			t.Errorf("%s: unknown service: %v", engine, err)
		}
		if _, err := src.Fetch(ctx, Query{Service: "shop", Start: now, End: now}); err == nil || !strings.Contains(err.Error(),
			"empty time range") {
			t.Errorf("%s: start = end: %v", engine, err)
		}
	}
}

// Headers reach the engine; a multi-tenant Pyroscope wants its tenant.
func TestHeadersAndTenant(t *testing.T) {
	st, sources, now := engines(t)
	st.Tenant = "team-a"
	src := sources[Pyroscope]
	q := Query{Service: "shop", Start: now.Add(-time.Hour), End: now}
	if _, err := src.Fetch(context.Background(), q); err == nil || !strings.Contains(err.Error(), "unauthenticated") {
		t.Errorf("no tenant: %v", err)
	}
	src.Header.Set("X-Scope-OrgID", "team-a")
	src.Header.Set("Authorization", "Bearer x")
	if _, err := src.Fetch(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	last := st.Headers[len(st.Headers)-1]
	if last.Get("Authorization") != "Bearer x" {
		t.Errorf("headers served: %v", last)
	}
	if sel := st.Selectors[len(st.Selectors)-1]; sel != `{service_name="shop"}` {
		t.Errorf("selector %q", sel)
	}
}

// A reply past MaxBytes is refused, not read whole.
func TestBoundedReads(t *testing.T) {
	_, sources, now := engines(t)
	for engine, src := range sources {
		src.MaxBytes = 64
		_, err := src.Fetch(context.Background(), Query{Service: "shop", Start: now.Add(-time.Hour), End: now})
		if err == nil {
			t.Errorf("%s: a profile over 64 bytes was taken", engine)
		}
	}
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	for _, engine := range []string{Pyroscope, Parca} {
		src, _ := ParseSource(engine + "://" + addr)
		_, err := src.Fetch(context.Background(), Query{Service: "x", Start: time.Now().Add(-time.Hour), End: time.Now()})
		if err == nil || !strings.Contains(err.Error(), "cannot be reached") || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%s: %v", engine, err)
		}
	}
}

func TestParseSource(t *testing.T) {
	for raw, want := range map[string]string{
		"pyroscope://h:4040":             "http://h:4040",
		"parca://h:7070/":                "http://h:7070",
		"pyroscope+https://h/prefix":     "https://h/prefix",
		"http://h:4040":                  "",
		"pyroscope://":                   "",
		"pyroscope://u:p@h:4040":         "",
		"parca+ftp://h:1":                "",
		"pyroscope://h:4040/?from=now-1": "",
	} {
		src, err := ParseSource(raw)
		switch {
		case want == "" && err == nil:
			t.Errorf("%s: taken as %s", raw, src.BaseURL)
		case want != "" && (err != nil || src.BaseURL != want):
			t.Errorf("%s: %v %v, want %s", raw, src, err, want)
		}
	}
	if got := (Query{Service: "a", Labels: `region="eu", v=~"4.*"`}).Selector(Parca); got != `{job="a",region="eu", v=~"4.*"}` {
		t.Errorf("selector %s", got)
	}
}
