package target

import (
	"context"
	"net/http"
	"net/http/pprof"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/result"
)

// A goroutineleak that answers 200 with something not a profile is one
// warning, and the goroutine counts stand in for it.
func TestLeakProfileNotAProfile(t *testing.T) {
	mux := pprofMux(pprof.Profile)
	mux.HandleFunc("/debug/pprof/goroutineleak", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("goroutine 1 [running]:\nthis is not a profile\x1b[31m\n"))
	})
	o := ProfileOptions{PprofURL: serve(t, mux).JoinPath("/debug/pprof/"), LeakSettle: 100 * time.Millisecond}
	p := CaptureProfiles(context.Background(), o, time.Second)
	var leakWarnings []string
	for _, w := range p.Warnings {
		if w.Kind == "leak-profile" {
			leakWarnings = append(leakWarnings, w.Message)
		}
	}
	if len(leakWarnings) != 1 || strings.Contains(leakWarnings[0], "\n") || strings.Contains(leakWarnings[0], "\x1b") {
		t.Errorf("leak-profile warnings %q, want one line", leakWarnings)
	}
	if p.Leaks == nil || p.Leaks.Source != result.LeakGoroutines {
		t.Errorf("leak check %+v, want the goroutine counts", p.Leaks)
	}
	t.Log(leakWarnings)
}

func TestDumpFunc(t *testing.T) {
	for in, want := range map[string]string{
		"main.parkForever(0xc000012345)": "main.parkForever",
		"main.(*srv).handle.func1()":     "main.(*srv).handle.func1",
		"net/http.(*conn).serve(...)":    "net/http.(*conn).serve",
	} {
		if got := dumpFunc(in); got != want {
			t.Errorf("dumpFunc(%q) = %q, want %q", in, got, want)
		}
	}
}
