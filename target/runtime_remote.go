package target

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/probehq/probe/lib/redirect"
	"github.com/probehq/probe/result"
)

// What a target that probe cannot read on this machine says of its
// runtime over HTTP (Go 1.27.3's net/http/pprof and expvar):
//
//   - expvar's /debug/vars publishes cmdline (os.Args) and memstats
//     (runtime.MemStats) by default. Neither carries the Go version,
//     GOEXPERIMENT, GOMAXPROCS, GOGC or GOMEMLIMIT: MemStats has NextGC
//     and GCCPUFraction, outcomes of GOGC and GOMEMLIMIT, never the
//     settings, so it is not read.
//   - Many servers publish their build information there themselves,
//     debug.ReadBuildInfo() as an expvar.Func: a JSON object (GoVersion,
//     Path, Main, Settings), or its String() form. It gives the Go
//     version, the GOEXPERIMENT build setting and the main module.
//   - A profile's functions name their source files. A binary built by a
//     toolchain the go command downloaded (GOTOOLCHAIN) has its GOROOT in
//     the module cache, golang.org/toolchain@v0.0.1-go1.27.3.linux-amd64,
//     and that version is then in the runtime's file names. A GOROOT
//     elsewhere (/usr/local/go) or a -trimpath build says nothing.
//
// GOMAXPROCS, GOGC, GOMEMLIMIT, GODEBUG and the CPUs stay unknown: only
// the process (its environment) or the target's own publishing says them.

// maxVars bounds what is read of /debug/vars (memstats is some 10 KiB).
const maxVars = 1 << 20

// remoteTimeout bounds each read of the runtime over HTTP.
const remoteTimeout = 3 * time.Second

// What would settle figures a target's HTTP endpoints do not give: its
// build information published (the Go version and GOEXPERIMENT), and only
// its process for its environment's settings.
const (
	settleExpvar = "have it publish its build information over expvar for the Go version and GOEXPERIMENT " +
		"(expvar.Publish(\"buildinfo\", expvar.Func(func() any { bi, _ := debug.ReadBuildInfo(); return bi })))"
	settleProcess = "run probe where it can read the target's process (/proc/PID/exe and environ: as its user, " +
		"on its machine or in its container)"
)

// goVersionShape is a release's version as runtime.Version says it
// (go1.27.3, go1.28rc1), with the experiments a build adds (" X:…").
var goVersionShape = regexp.MustCompile(`^go1\.[0-9]{1,3}(\.[0-9]{1,3})?((rc|beta)[0-9]{1,2})?( X:[a-z0-9,]{1,200})?$`)

// experimentShape is a GOEXPERIMENT setting's value.
var experimentShape = regexp.MustCompile(`^[a-z0-9,]{1,200}$`)

// modulePathShape is a main module's path as a build records it.
var modulePathShape = regexp.MustCompile(`^[A-Za-z0-9._~+/-]{1,200}$`)

// toolchainPath is a downloaded toolchain's GOROOT in a source file name.
var toolchainPath = regexp.MustCompile(`golang\.org/toolchain@v0\.0\.1-(go1\.[0-9]{1,3}(?:\.[0-9]{1,3})?(?:(?:rc|beta)[0-9]{1,2})?)\.[a-z0-9]+-[a-z0-9]+/src/`)

// RuntimeOverHTTP is the target's runtime as its HTTP endpoints say it,
// when probe cannot read its process (why): its build information
// published over expvar at pprof's host (/debug/vars), else the
// toolchain's version in the file names of a profile it serves (pprof,
// checked; nil: none). It does not fail: what it cannot know stays empty,
// and Unknown says why and what would settle it.
func RuntimeOverHTTP(ctx context.Context, pprof, checked *url.URL, why string) *result.Runtime {
	rt := &result.Runtime{}
	var said []string
	if pprof != nil {
		vars := *pprof
		vars.Path, vars.RawPath, vars.RawQuery, vars.Fragment = "/debug/vars", "", "", ""
		info, err := expvarBuildInfo(ctx, &vars)
		if err == nil {
			rt.GoVersion, rt.GOEXPERIMENT, rt.Module, rt.From = info.GoVersion, info.experiment, info.module, "expvar"
		} else {
			said = append(said, err.Error())
		}
	}
	if rt.GoVersion == "" && checked != nil {
		v, err := profileToolchain(ctx, checked)
		if err == nil {
			rt.GoVersion, rt.From = v, "profile paths"
		} else {
			said = append(said, err.Error())
		}
	}
	if pprof == nil {
		said = append(said, "no pprof URL to ask (profiles not asked for)")
	}
	unknown := "GOMAXPROCS, GOGC, GOMEMLIMIT and GODEBUG"
	switch rt.From {
	case "":
		unknown = "the Go version, GOEXPERIMENT, " + unknown
	case "profile paths":
		unknown = "GOEXPERIMENT, " + unknown
	}
	rt.Unknown = fmt.Sprintf("%s: probe cannot read the target's process (%s)", unknown, why)
	if len(said) > 0 {
		rt.Unknown += "; " + strings.Join(said, "; ")
	}
	if rt.From == "expvar" {
		rt.Unknown += "; to know them, " + settleProcess
	} else {
		rt.Unknown += "; to know them, " + settleExpvar + ", or " + settleProcess
	}
	return rt
}

// buildInfo is what a published build information says, checked.
type buildInfo struct {
	GoVersion, experiment, module string
}

// expvarBuildInfo reads u (a /debug/vars) and finds a published build
// information among its variables: a JSON object with a GoVersion, or
// debug.BuildInfo's String() form. The first in name order that has one
// is checked and taken; a malformed one is refused, never trimmed to fit.
func expvarBuildInfo(ctx context.Context, u *url.URL) (buildInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", u.String(), nil)
	resp, err := pprofClient.Do(req)
	if e := redirect.As(err); e != nil {
		return buildInfo{}, fmt.Errorf("%s: %w", u.Path, e)
	}
	if err != nil {
		return buildInfo{}, fmt.Errorf("%s: %v", u.Path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return buildInfo{}, fmt.Errorf("%s answers %d (no expvar)", u.Path, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxVars+1))
	if err != nil {
		return buildInfo{}, fmt.Errorf("%s: %v", u.Path, err)
	}
	if len(body) > maxVars {
		return buildInfo{}, fmt.Errorf("%s is over %d KiB: not read", u.Path, maxVars>>10)
	}
	var vars map[string]json.RawMessage
	if err := json.Unmarshal(body, &vars); err != nil {
		return buildInfo{}, fmt.Errorf("%s is no JSON object of variables", u.Path)
	}
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		info, ok, err := asBuildInfo(vars[name])
		if !ok {
			continue
		}
		if err != nil {
			return buildInfo{}, fmt.Errorf("%s's %q is refused: %v", u.Path, limitName(name), err)
		}
		return info, nil
	}
	return buildInfo{}, fmt.Errorf("%s publishes no build information (%d variables: %s)", u.Path, len(names), nameList(names))
}

// asBuildInfo reads one variable as a build information: ok when it is
// one (it names a GoVersion), err when that fails the checks.
func asBuildInfo(raw json.RawMessage) (info buildInfo, ok bool, err error) {
	var bi debug.BuildInfo
	var s string
	switch {
	case json.Unmarshal(raw, &s) == nil:
		// String's form: ParseBuildInfo leaves its first line, the
		// Go version, to the caller.
		first, _, _ := strings.Cut(s, "\n")
		v, isGo := strings.CutPrefix(first, "go\t")
		p, perr := debug.ParseBuildInfo(s)
		if !isGo || perr != nil {
			return buildInfo{}, false, nil
		}
		bi = *p
		bi.GoVersion = v
	case json.Unmarshal(raw, &bi) != nil:
		return buildInfo{}, false, nil
	}
	if bi.GoVersion == "" {
		return buildInfo{}, false, nil
	}
	if !goVersionShape.MatchString(bi.GoVersion) {
		return buildInfo{}, true, fmt.Errorf("GoVersion %q is no Go release's version", limitName(bi.GoVersion))
	}
	info.GoVersion = bi.GoVersion
	if p := bi.Main.Path; p != "" {
		if !modulePathShape.MatchString(p) {
			return buildInfo{}, true, fmt.Errorf("its main module %q is no module path", limitName(p))
		}
		info.module = p
	}
	for _, kv := range bi.Settings {
		if kv.Key == "GOEXPERIMENT" && kv.Value != "" {
			if !experimentShape.MatchString(kv.Value) {
				return buildInfo{}, true, fmt.Errorf("GOEXPERIMENT %q is no experiment list", limitName(kv.Value))
			}
			info.experiment = kv.Value
		}
	}
	return info, true, nil
}

// profileToolchain reads the target's goroutine profile (small, and
// served by every net/http/pprof) and gives the toolchain version its
// file names carry, when they carry one and agree.
func profileToolchain(ctx context.Context, pprof *url.URL) (string, error) {
	p, _, err := fetchProfile(ctx, pprof, "goroutine", nil, ProfileOptions{Slack: remoteTimeout, MaxProfile: 8 << 20})
	if err != nil {
		return "", fmt.Errorf("its goroutine profile: %v", err)
	}
	seen := map[string]bool{}
	for _, f := range p.Function {
		if m := toolchainPath.FindStringSubmatch(f.Filename); m != nil {
			seen[m[1]] = true
		}
	}
	switch len(seen) {
	case 0:
		return "", errors.New("its profile's file names carry no toolchain version (a GOROOT outside the module cache, or -trimpath)")
	case 1:
		for v := range seen {
			return v, nil
		}
	}
	return "", fmt.Errorf("its profile's file names name %d toolchains", len(seen))
}

// limitName is a target's string cut short, for an error that quotes it.
func limitName(s string) string {
	if len(s) > 60 {
		return strings.ToValidUTF8(s[:60], "") + "…"
	}
	return s
}

// nameList is a few of a target's variable names, quoted.
func nameList(names []string) string {
	var q []string
	for i, n := range names {
		if i == 5 {
			q = append(q, fmt.Sprintf("and %d more", len(names)-5))
			break
		}
		q = append(q, fmt.Sprintf("%q", limitName(n)))
	}
	return strings.Join(q, ", ")
}

// remoteRuntimeTTL is how long a target's runtime read over HTTP is taken
// as known: every run of a suite opens the target again, and reading it
// costs a goroutine profile (the world stopped) and up to 6 s when it
// hangs.
const remoteRuntimeTTL = time.Minute

var remoteRuntimes = struct {
	sync.Mutex
	m map[string]remoteRuntime
}{m: map[string]remoteRuntime{}}

type remoteRuntime struct {
	rt *result.Runtime
	at time.Time
}

// runtimeOverHTTPOnce is RuntimeOverHTTP, read again only when the last
// read of the same URLs is older than remoteRuntimeTTL.
func runtimeOverHTTPOnce(ctx context.Context, pprof, checked *url.URL, why string) *result.Runtime {
	key := fmt.Sprint(pprof, "|", checked, "|", why)
	remoteRuntimes.Lock()
	c, ok := remoteRuntimes.m[key]
	remoteRuntimes.Unlock()
	if ok && time.Since(c.at) < remoteRuntimeTTL {
		rt := *c.rt
		return &rt
	}
	rt := RuntimeOverHTTP(ctx, pprof, checked, why)
	remoteRuntimes.Lock()
	remoteRuntimes.m[key] = remoteRuntime{rt: rt, at: time.Now()}
	remoteRuntimes.Unlock()
	cp := *rt
	return &cp
}
