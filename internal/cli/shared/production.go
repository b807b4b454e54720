package shared

import (
	"context"
	"flag"
	"fmt"
	"net/textproto"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes/production"
	"github.com/probehq/probe/report"
)

// productionFlags name a fleet's continuous profiler and what to read from
// it: probe analyze --from, probe compare --from, probe all --production.
type ProductionFlags struct {
	From, service, labels, typ, tenant string
	since                              time.Duration
	start, end                         string
	headers                            []string
	timeout                            time.Duration
	prefix                             string // of the flags' names
}

// register adds the flags; prefix is put before all but the engine's and
// --service ("production-" in probe all, where --header would read as the
// target's).
func (f *ProductionFlags) Register(fs *flag.FlagSet, fromFlag, fromHelp string, since time.Duration, prefix string) {
	f.prefix = prefix
	fs.StringVar(&f.From, fromFlag, "", fromHelp)
	fs.StringVar(&f.service, "service", "", "the service whose profiles to read (Pyroscope's service_name, Parca's job)")
	fs.StringVar(&f.labels, prefix+"labels", "", `more label matchers, e.g. 'region="eu",pod=~"web-.*"'`)
	fs.StringVar(&f.typ, prefix+"type", "cpu", "profile type: cpu, alloc, mutex, block, or the engine's profile type ID")
	fs.DurationVar(&f.since, prefix+"since", since, "read the profiles of this long before now (or give the start and end)")
	fs.StringVar(&f.start, prefix+"start", "", "start of the profiles' time range: RFC 3339 (2026-11-30T10:00:00Z) or a duration ago (90m)")
	fs.StringVar(&f.end, prefix+"end", "", "end of the profiles' time range, as the start (default now)")
	fs.Func(prefix+"header", "a header for the profiler's API, 'Name: value' (repeatable), e.g. 'Authorization: Bearer …'",
		func(s string) error {
			f.headers = append(f.headers, s)
			return nil
		})
	fs.StringVar(&f.tenant, prefix+"tenant", "", "the tenant of a multi-tenant Pyroscope (X-Scope-OrgID)")
	fs.DurationVar(&f.timeout, prefix+"api-timeout", 60*time.Second, "bound of one call to the profiler's API")
}

// source is the profiler the flags name, reads bounded by maxBytes.
func (f *ProductionFlags) Source(fromFlag string, maxBytes int64) (*production.Source, error) {
	src, err := production.ParseSource(f.From)
	if err != nil {
		return nil, UsageError{fmt.Sprintf("--%s %v", fromFlag, err)}
	}
	for _, h := range f.headers {
		name, value, ok := strings.Cut(h, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, UsageError{fmt.Sprintf("--%sheader %q: want Name:value", f.prefix, h)}
		}
		src.Header.Add(textproto.CanonicalMIMEHeaderKey(name), strings.TrimSpace(value))
	}
	if f.tenant != "" {
		src.Header.Set("X-Scope-OrgID", f.tenant)
	}
	if f.timeout <= 0 {
		return nil, UsageError{fmt.Sprintf("--%sapi-timeout %v: want more than 0", f.prefix, f.timeout)}
	}
	src.Timeout, src.MaxBytes = f.timeout, maxBytes
	return src, nil
}

// query is what the flags select, the range ending at now unless told.
func (f *ProductionFlags) Query(now time.Time) (production.Query, error) {
	q := production.Query{Service: f.service, Labels: f.labels, Type: f.typ}
	if f.service == "" {
		return q, UsageError{"--service is required with a profiler: the service whose profiles to read"}
	}
	if _, err := q.TypeID(production.Pyroscope); err != nil {
		return q, UsageError{"--" + f.prefix + "type: " + err.Error()}
	}
	var err error
	if q.Start, q.End, err = f.timeRange(now); err != nil {
		return q, err
	}
	return q, nil
}

// timeRange is --start/--end, or --since before now.
func (f *ProductionFlags) timeRange(now time.Time) (start, end time.Time, err error) {
	end = now
	if f.end != "" {
		if end, err = parseWhen("--"+f.prefix+"end", f.end, now); err != nil {
			return
		}
	}
	if f.start != "" {
		start, err = parseWhen("--"+f.prefix+"start", f.start, now)
	} else if f.since <= 0 {
		err = UsageError{fmt.Sprintf("--%ssince %v: want more than 0", f.prefix, f.since)}
	} else {
		start = end.Add(-f.since)
	}
	if err == nil && !end.After(start) {
		err = UsageError{fmt.Sprintf("empty time range: %s to %s (the start must come before the end)", start.UTC().Format(time.RFC3339),
			end.UTC().Format(time.RFC3339))}
	}
	return
}

// parseWhen reads RFC 3339 or a duration before now.
func parseWhen(flagName, s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(strings.TrimPrefix(s, "-")); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, UsageError{fmt.Sprintf("%s %q: want RFC 3339 (2026-11-30T10:00:00Z) or a duration ago (90m)", flagName, s)}
}

// parseRange reads START/END, each as parseWhen reads it.
func ParseRange(flagName, s string, now time.Time) (time.Time, time.Time, error) {
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		return time.Time{}, time.Time{}, UsageError{fmt.Sprintf("%s %q: want START/END, e.g. "+
			"2026-11-30T10:00:00Z/2026-11-30T11:00:00Z or 3h/2h", flagName, s)}
	}
	start, err := parseWhen(flagName, a, now)
	if err != nil {
		return start, start, err
	}
	end, err := parseWhen(flagName, b, now)
	if err == nil && !end.After(start) {
		err = UsageError{fmt.Sprintf("%s %q: empty time range (the start must come before the end)", flagName, s)}
	}
	return start, end, err
}

// fleetProfile is probe all --production's fleet CPU profile, fetched
// before the load (a bad engine costs no run).
type FleetProfile struct {
	src     *production.Source
	q       production.Query
	profile *profile.Profile
}

// fetchFleet fetches the fleet's CPU profile; nil without --production.
func (f *ProductionFlags) FetchFleet(ctx context.Context, prof *ProfileFlags) (*FleetProfile, error) {
	if f.From == "" {
		if f.service != "" {
			return nil, UsageError{"--service names a service of --production: give --production pyroscope://HOST:PORT"}
		}
		return nil, nil
	}
	if !prof.Profile {
		return nil, UsageError{"--production weighs the lab's findings: add --profile"}
	}
	src, err := f.Source("production", int64(prof.MaxProfile))
	if err != nil {
		return nil, err
	}
	q, err := f.Query(time.Now())
	if err != nil {
		return nil, err
	}
	if q.Type != "cpu" {
		return nil, UsageError{"--production weighs findings by CPU: --production-type cpu"}
	}
	p, err := src.Fetch(ctx, q)
	if err != nil {
		return nil, err
	}
	return &FleetProfile{src: src, q: q, profile: p}, nil
}

// weigh sets each finding's share of the fleet's CPU (nil: no --production).
func (fl *FleetProfile) Weigh(runs []*report.Run) {
	if fl != nil {
		pipeline.WeighByFleet(fl.profile, fl.src, fl.q, runs)
	}
}
