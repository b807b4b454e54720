package target

import (
	"context"
	"encoding/json"
	"expvar"
	"net/http"
	"net/url"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// remoteServer serves vars at /debug/vars (nil: 404) and, when
// goroutine is set, that profile at /debug/pprof/goroutine.
func remoteServer(t *testing.T, vars http.Handler, goroutine *profile.Profile) (pprof *url.URL) {
	t.Helper()
	mux := http.NewServeMux()
	if vars != nil {
		mux.Handle("GET /debug/vars", vars)
	}
	mux.HandleFunc("GET /debug/pprof/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debug/pprof/goroutine" && goroutine != nil {
			goroutine.Write(w)
			return
		}
		http.NotFound(w, r)
	})
	return serve(t, mux).JoinPath("/debug/pprof/")
}

// varsOf serves a /debug/vars of expvar's two defaults and extra.
func varsOf(extra map[string]any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		vars := map[string]any{"cmdline": []string{"server", "-http", ":8080"}, "memstats": ms}
		for k, v := range extra {
			vars[k] = v
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		json.NewEncoder(w).Encode(vars)
	})
}

// A server that publishes its build information over expvar (as an object
// or as BuildInfo.String) gives its Go version, its experiments and its
// module: from "expvar", the settings unknown and said so.
func TestRuntimeOverHTTPFromExpvarBuildInfo(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Skip("no build information in the test binary")
	}
	for name, published := range map[string]any{"object": bi, "string": bi.String()} {
		t.Run(name, func(t *testing.T) {
			pprof := remoteServer(t, varsOf(map[string]any{"buildinfo": published}), nil)
			rt := RuntimeOverHTTP(context.Background(), pprof, pprof, "its process is not seen")
			if rt.GoVersion != runtime.Version() || rt.From != "expvar" || rt.Module != bi.Main.Path {
				t.Errorf("go %q (want %q), from %q, module %q (want %q)", rt.GoVersion, runtime.Version(), rt.From,
					rt.Module, bi.Main.Path)
			}
			if rt.GOMAXPROCS != "" || rt.GOGC != "" || rt.GOMEMLIMIT != "" || rt.CPUs != 0 {
				t.Errorf("settings guessed: %+v", rt)
			}
			if !strings.HasPrefix(rt.Unknown, "GOMAXPROCS, GOGC, GOMEMLIMIT and GODEBUG: probe cannot read the target's process (its process is not seen)") ||
				!strings.Contains(rt.Unknown, "run probe where it can read the target's process") || strings.Contains(rt.Unknown, "expvar.Publish") {
				t.Errorf("unknown: %s", rt.Unknown)
			}
		})
	}
	// The experiments a build records are its GOEXPERIMENT.
	fake := map[string]any{"GoVersion": "go1.26.2 X:greenteagc", "Main": map[string]any{"Path": "example.com/srv"},
		"Settings": []map[string]string{{"Key": "GOEXPERIMENT", "Value": "greenteagc"}}}
	pprof := remoteServer(t, varsOf(map[string]any{"build": fake}), nil)
	rt := RuntimeOverHTTP(context.Background(), pprof, pprof, "x")
	if rt.GoVersion != "go1.26.2 X:greenteagc" || rt.GOEXPERIMENT != "greenteagc" || rt.Module != "example.com/srv" {
		t.Errorf("%+v", rt)
	}
}

// expvar's defaults alone (cmdline, memstats) say no Go version: the
// runtime is unknown, and says what would settle it.
func TestRuntimeOverHTTPDefaultExpvar(t *testing.T) {
	pprof := remoteServer(t, expvar.Handler(), nil)
	rt := RuntimeOverHTTP(context.Background(), pprof, pprof, "its process is not seen")
	if rt.GoVersion != "" || rt.From != "" || rt.GOEXPERIMENT != "" || rt.Module != "" || rt.GOGC != "" {
		t.Errorf("guessed %+v", rt)
	}
	for _, want := range []string{"the Go version, GOEXPERIMENT, GOMAXPROCS, GOGC, GOMEMLIMIT and GODEBUG",
		"/debug/vars publishes no build information", `"cmdline"`, `"memstats"`, `expvar.Publish("buildinfo"`,
		"its goroutine profile"} {
		if !strings.Contains(rt.Unknown, want) {
			t.Errorf("unknown lacks %q: %s", want, rt.Unknown)
		}
	}
	// No pprof URL: nothing asked, and said so.
	rt = RuntimeOverHTTP(context.Background(), nil, nil, "why")
	if rt.GoVersion != "" || !strings.Contains(rt.Unknown, "no pprof URL to ask") {
		t.Errorf("%+v", rt)
	}
}

// What a hostile or broken /debug/vars sends is bounded and refused, never
// taken in part.
func TestRuntimeOverHTTPHostileExpvar(t *testing.T) {
	huge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"buildinfo": {"GoVersion": "go1.27.3", "Path": "`))
		chunk := []byte(strings.Repeat("a", 64<<10))
		for range 64 { // 4 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		w.Write([]byte(`"}}`))
	})
	redirect := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://example.com/debug/vars", http.StatusFound)
	})
	for name, c := range map[string]struct {
		vars http.Handler
		says string
	}{
		"huge":     {huge, "/debug/vars is over 1024 KiB: not read"},
		"non-JSON": {http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>go1.27.3</html>")) }), "no JSON object"},
		"shell": {varsOf(map[string]any{"buildinfo": map[string]any{"GoVersion": "go1.27; rm -rf /"}}),
			`"buildinfo" is refused: GoVersion "go1.27; rm -rf /" is no Go release's version`},
		"escape": {varsOf(map[string]any{"bi": map[string]any{"GoVersion": "go1.27.3\x1b[2J\n# pwned"}}),
			`GoVersion "go1.27.3\x1b[2J\n# pwned" is no Go release's version`},
		"experiment": {varsOf(map[string]any{"bi": map[string]any{"GoVersion": "go1.27.3",
			"Settings": []map[string]string{{"Key": "GOEXPERIMENT", "Value": "x<script>"}}}}), "is no experiment list"},
		"module": {varsOf(map[string]any{"bi": map[string]any{"GoVersion": "go1.27.3", "Main": map[string]any{"Path": "a b\n"}}}),
			"is no module path"},
		"redirect": {redirect, "redirect"},
		"long": {varsOf(map[string]any{"bi": map[string]any{"GoVersion": "go1.27.3" + strings.Repeat("9", 500)}}),
			"…\" is no Go release's version"},
	} {
		t.Run(name, func(t *testing.T) {
			pprof := remoteServer(t, c.vars, nil)
			rt := RuntimeOverHTTP(context.Background(), pprof, nil, "why")
			if rt.GoVersion != "" || rt.From != "" || rt.Module != "" || rt.GOEXPERIMENT != "" {
				t.Errorf("took %+v", rt)
			}
			if !strings.Contains(rt.Unknown, c.says) {
				t.Errorf("unknown lacks %q: %s", c.says, rt.Unknown)
			}
			if len(rt.Unknown) > 2000 {
				t.Errorf("unknown is %d bytes", len(rt.Unknown))
			}
		})
	}
}

// goroutineProfile is a goroutine profile whose functions are in files.
func goroutineProfile(files ...string) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "goroutine", Unit: "count"}},
		PeriodType: &profile.ValueType{Type: "goroutine", Unit: "count"}, Period: 1}
	var locs []*profile.Location
	for i, f := range files {
		fn := &profile.Function{ID: uint64(i + 1), Name: "runtime.f" + string(rune('a'+i)), SystemName: "runtime.f", Filename: f}
		loc := &profile.Location{ID: uint64(i + 1), Address: uint64(0x1000 + i), Line: []profile.Line{{Function: fn, Line: 10}}}
		p.Function = append(p.Function, fn)
		p.Location = append(p.Location, loc)
		locs = append(locs, loc)
	}
	p.Sample = []*profile.Sample{{Location: locs, Value: []int64{1}}}
	return p
}

// Without build information, a profile's file names give the toolchain's
// version when a downloaded toolchain's GOROOT is in them, and only then.
func TestRuntimeOverHTTPFromProfilePaths(t *testing.T) {
	const tc = "/root/go/pkg/mod/golang.org/toolchain@v0.0.1-go1.26.2.linux-amd64/src/"
	pprof := remoteServer(t, nil, goroutineProfile(tc+"runtime/proc.go", tc+"net/http/server.go", "/src/app/main.go"))
	rt := RuntimeOverHTTP(context.Background(), pprof, pprof, "why")
	if rt.GoVersion != "go1.26.2" || rt.From != "profile paths" || rt.GOEXPERIMENT != "" || rt.Module != "" {
		t.Errorf("%+v", rt)
	}
	if !strings.HasPrefix(rt.Unknown, "GOEXPERIMENT, GOMAXPROCS") || !strings.Contains(rt.Unknown, "/debug/vars answers 404") {
		t.Errorf("unknown: %s", rt.Unknown)
	}
	for name, files := range map[string][]string{
		"GOROOT elsewhere": {"/usr/local/go/src/runtime/proc.go"},
		"trimpath":         {"runtime/proc.go"},
		"two toolchains":   {tc + "runtime/proc.go", "/x/golang.org/toolchain@v0.0.1-go1.27.3.linux-amd64/src/runtime/chan.go"},
		"not a version":    {"/x/golang.org/toolchain@v0.0.1-go1.27;rm.linux-amd64/src/runtime/proc.go"},
	} {
		pprof := remoteServer(t, nil, goroutineProfile(files...))
		if rt := RuntimeOverHTTP(context.Background(), pprof, pprof, "why"); rt.GoVersion != "" || rt.From != "" {
			t.Errorf("%s: took %+v", name, rt)
		}
	}
}

// This test binary's own goroutine profile, over net/http/pprof: when its
// runtime's files are in a downloaded toolchain, that is its version.
func TestRuntimeOverHTTPOwnProfile(t *testing.T) {
	if !toolchainPath.MatchString(runtime.GOROOT() + "/src/") {
		t.Skip("GOROOT is no downloaded toolchain: ", runtime.GOROOT())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/{name}", func(w http.ResponseWriter, r *http.Request) {
		p := pprof.Lookup(r.PathValue("name"))
		if p == nil {
			http.NotFound(w, r)
			return
		}
		p.WriteTo(w, 0)
	})
	base := serve(t, mux).JoinPath("/debug/pprof/")
	rt := RuntimeOverHTTP(context.Background(), base, base, "why")
	if want, _, _ := strings.Cut(runtime.Version(), " "); rt.GoVersion != want || rt.From != "profile paths" {
		t.Errorf("go %q from %q, want %q", rt.GoVersion, rt.From, want)
	}
}

// Open asks the target's endpoints when its process is no Go binary probe
// can read (here a shell probe started in front of it), and the
// pprof URL's host publishes its build information.
func TestOpenFallsBackToTheEndpoints(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Skip("no build information in the test binary")
	}
	mux := http.NewServeMux()
	mux.Handle("GET /debug/vars", varsOf(map[string]any{"buildinfo": bi}))
	mux.HandleFunc("GET /debug/pprof/", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<a>profile</a>")) })
	u := serve(t, mux)
	child := startShell(t, sleeper, 0)
	got := Open(context.Background(), Spec{URL: u, Child: child, Pprof: u.JoinPath("/debug/pprof/")})
	if rt := got.Runtime; rt == nil || rt.GoVersion != runtime.Version() || rt.From != "expvar" ||
		!strings.Contains(rt.Unknown, "the build information of process") {
		t.Errorf("runtime %+v", rt)
	}
	// No pprof URL: nothing asked, the runtime unknown and said so.
	got = Open(context.Background(), Spec{URL: u, Child: child})
	if rt := got.Runtime; rt == nil || rt.GoVersion != "" || !strings.Contains(rt.Unknown, "no pprof URL to ask") {
		t.Errorf("runtime %+v", rt)
	}
}
