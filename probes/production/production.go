// Package production fetches merged profiles of a service from the
// continuous profilers a fleet already runs (Grafana Pyroscope, Parca)
// through their own query APIs, so that probe analyzes the fleet's real
// traffic. Each read is bounded in bytes and time, and what comes back is
// parsed with github.com/google/pprof/profile and checked before use.
package production

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/pprofio"
	"github.com/probehq/probe/lib/redirect"
	"github.com/probehq/probe/lib/textline"
)

// Engine names a continuous profiler.
const (
	Pyroscope = "pyroscope"
	Parca     = "parca"
)

// Types are the profile types by their short names (--type), each
// engine's profile type ID for it. A --type holding ':' is taken as an ID
// as it is (Parca's eBPF agent writes parca_agent:samples:count:cpu:…).
var Types = map[string]map[string]string{
	Pyroscope: {
		"cpu":   "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
		"alloc": "memory:alloc_space:bytes:space:bytes",
		"mutex": "mutex:delay:nanoseconds:mutex:count",
		"block": "block:delay:nanoseconds:block:count",
	},
	Parca: {
		"cpu":   "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta",
		"alloc": "memory:alloc_space:bytes:space:bytes",
		"mutex": "mutex:delay:nanoseconds:contentions:count",
		"block": "block:delay:nanoseconds:contentions:count",
	},
}

// ServiceLabel is the label that names a service: Pyroscope's SDKs set
// service_name; Parca's scrape configs name the job.
var ServiceLabel = map[string]string{Pyroscope: "service_name", Parca: "job"}

// Source is one engine's query API and how to talk to it.
type Source struct {
	Engine  string // Pyroscope or Parca
	BaseURL string // http(s)://host:port[/prefix], no trailing slash
	Header  http.Header
	// MaxBytes bounds a reply as read and a profile as decompressed
	// (≤ 0: pprofio.DefaultLimit).
	MaxBytes int64
	// Timeout bounds one call (≤ 0: 60 s, a day merged on a busy
	// Pyroscope takes seconds).
	Timeout time.Duration
	Client  *http.Client // nil: a client of its own
}

// ParseSource reads pyroscope://HOST:PORT[/PREFIX] or parca://… (plain
// HTTP), or pyroscope+https://… and parca+https://… (TLS).
func ParseSource(raw string) (*Source, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%q: want pyroscope://HOST:PORT or parca://HOST:PORT (+https for TLS)", raw)
	}
	engine, scheme, _ := strings.Cut(u.Scheme, "+")
	if engine != Pyroscope && engine != Parca {
		return nil, fmt.Errorf("%q: unknown engine %q (want pyroscope or parca)", raw, engine)
	}
	switch scheme {
	case "":
		scheme = "http"
	case "http", "https":
	default:
		return nil, fmt.Errorf("%q: want %s:// or %s+https://", raw, engine, engine)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("%q: no user, query or fragment (use --header for auth)", raw)
	}
	base := scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/")
	return &Source{Engine: engine, BaseURL: base, Header: http.Header{}}, nil
}

// String is the source as given.
func (s *Source) String() string {
	scheme, rest, _ := strings.Cut(s.BaseURL, "://")
	if scheme == "https" {
		return s.Engine + "+https://" + rest
	}
	return s.Engine + "://" + rest
}

// Query selects what is merged: a service's profiles of one type whose
// labels match, between Start and End.
type Query struct {
	Service string
	// Labels are more matchers, PromQL style, with or without braces:
	// region="eu",version=~"v4.*".
	Labels     string
	Type       string // cpu, alloc, mutex, block, or an engine's type ID
	Start, End time.Time
}

// Selector is the query's label selector: {service="…",labels…}.
func (q Query) Selector(engine string) string {
	ms := []string{fmt.Sprintf("%s=%q", ServiceLabel[engine], q.Service)}
	if l := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(q.Labels), "{"), "}")); l != "" {
		ms = append(ms, l)
	}
	return "{" + strings.Join(ms, ",") + "}"
}

// TypeID is the engine's profile type ID for the query's type.
func (q Query) TypeID(engine string) (string, error) {
	t := q.Type
	if t == "" {
		t = "cpu"
	}
	if strings.Contains(t, ":") {
		return t, nil
	}
	id, ok := Types[engine][t]
	if !ok {
		return "", fmt.Errorf("unknown profile type %q (want cpu, alloc, mutex, block or a profile type ID)", t)
	}
	return id, nil
}

func (q Query) check(engine string) error {
	if q.Service == "" {
		return errors.New("no service named")
	}
	if !q.End.After(q.Start) {
		return fmt.Errorf("empty time range: %s to %s", stamp(q.Start), stamp(q.End))
	}
	_, err := q.TypeID(engine)
	return err
}

// lookBack is how far before a query's start an empty answer looks for
// the services the engine has (up to now).
const lookBack = 7 * 24 * time.Hour

// ErrNoSamples: the engine holds the service, but no samples of the
// type in the range.
var ErrNoSamples = errors.New("no samples")

// UnknownServiceError: the engine holds no profiles of the service in the
// range; Known are the services it does hold there.
type UnknownServiceError struct {
	Engine, Service string
	Known           []string
}

func (e *UnknownServiceError) Error() string {
	has := "none"
	if len(e.Known) > 0 {
		has = textline.Names(e.Known, 100)
	}
	return fmt.Sprintf("%s has no service %q from 7 days before the range to now (services it has: %s)", e.Engine, e.Service, has)
}

// Fetch is the merged profile the query selects, parsed and checked.
// An empty answer is an UnknownServiceError when the service is not
// among those the engine lists for the range, else ErrNoSamples wrapped.
func (s *Source) Fetch(ctx context.Context, q Query) (*profile.Profile, error) {
	p, _, err := s.FetchChecked(ctx, q)
	return p, err
}

// FetchChecked is Fetch, and what was dropped from the profile as invalid
// (pprofio.DropInvalid; "" when nothing): a profile-invalid warning.
// The profile is bounded in bytes, samples, locations and functions
// (pprofio.Parse, MaxBytes).
func (s *Source) FetchChecked(ctx context.Context, q Query) (p *profile.Profile, invalid string, err error) {
	if err := q.check(s.Engine); err != nil {
		return nil, "", err
	}
	id, _ := q.TypeID(s.Engine)
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	var raw []byte
	switch s.Engine {
	case Pyroscope:
		raw, err = s.pyroscopeMerge(ctx, id, q)
	default:
		raw, err = s.parcaMerge(ctx, id, q)
	}
	if err != nil {
		return nil, "", s.callError(err)
	}
	if len(raw) > 0 {
		if p, invalid, err = pprofio.Parse(raw, s.maxBytes()); err != nil {
			return nil, "", fmt.Errorf("%s answered a profile probe cannot read: %v", s, err)
		}
		if err := p.CheckValid(); err != nil {
			return nil, "", fmt.Errorf("%s answered an inconsistent profile: %v", s, err)
		}
	}
	if p == nil || len(p.Sample) == 0 || total(p) == 0 {
		// A service quiet in the range may have profiles before or after
		// it: then the range is empty, not the service unknown.
		known, err := s.Services(ctx, q.Start.Add(-lookBack), later(q.End, time.Now()))
		if err != nil {
			return nil, "", s.callError(err)
		}
		if !slices.Contains(known, q.Service) {
			return nil, "", &UnknownServiceError{Engine: s.String(), Service: q.Service, Known: known}
		}
		return nil, "", fmt.Errorf("%w of type %s for %s between %s and %s", ErrNoSamples, id, q.Selector(s.Engine), stamp(q.Start), stamp(q.End))
	}
	return p, invalid, nil
}

// Services are the values of the service label the engine holds between
// start and end, sorted.
func (s *Source) Services(ctx context.Context, start, end time.Time) ([]string, error) {
	var names []string
	var err error
	switch s.Engine {
	case Pyroscope:
		names, err = s.pyroscopeServices(ctx, start, end)
	default:
		names, err = s.parcaServices(ctx, start, end)
	}
	sort.Strings(names)
	return names, err
}

// callError names an engine that cannot be reached in one line.
func (s *Source) callError(err error) error {
	var op *net.OpError
	var dns *net.DNSError
	switch {
	case redirect.As(err) != nil:
		return fmt.Errorf("%s: %w", s, redirect.As(err))
	case errors.As(err, &op), errors.As(err, &dns):
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		return fmt.Errorf("%s cannot be reached: %s", s, textline.Of(err.Error(), textline.Max))
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s did not answer within %s", s, s.timeout())
	}
	return fmt.Errorf("%s: %s", s, textline.Of(err.Error(), textline.Max))
}

func (s *Source) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return 60 * time.Second
}

func (s *Source) maxBytes() int64 {
	if s.MaxBytes > 0 {
		return s.MaxBytes
	}
	return pprofio.DefaultLimit
}

// client is the engine's HTTP client; whoever made it, a 3xx is refused,
// not followed with the headers, the tenant and the query to where the
// engine points (lib/redirect).
func (s *Source) client() *http.Client {
	if s.Client == nil {
		return &http.Client{Timeout: s.timeout(), CheckRedirect: redirect.Refuse("the profiler query")}
	}
	c := *s.Client
	c.CheckRedirect = redirect.Refuse("the profiler query")
	return &c
}

func total(p *profile.Profile) int64 {
	var sum int64
	for _, smp := range p.Sample {
		for _, v := range smp.Value {
			sum += v
		}
	}
	return sum
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
