// Package enginetest is, for tests only, the query APIs of Grafana
// Pyroscope and Parca over profiles a test stores: Pyroscope's from the
// generated Connect handlers of its official API module, Parca's speaking
// Connect's JSON protocol from its published query.proto. Both honour the
// label selector, the time range and the profile type as the engines do.
package enginetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/google/pprof/profile"
	googlev1 "github.com/grafana/pyroscope/api/gen/proto/go/google/v1"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"google.golang.org/protobuf/proto"
)

// Entry is one stored profile: what an agent pushed at Time.
type Entry struct {
	// Name is the profile's name in a profile type ID: process_cpu,
	// memory, mutex, block.
	Name    string
	Labels  map[string]string
	Time    time.Time
	Profile *profile.Profile
}

// Store holds the entries and what the servers were asked.
type Store struct {
	mu      sync.Mutex
	entries []Entry
	// Tenant, when set, is the X-Scope-OrgID Pyroscope requires.
	Tenant string
	// Headers are the headers of each request served, in order.
	Headers []http.Header
	// Selectors are the label selectors of the merges asked, in order.
	Selectors []string
}

// Add stores an entry.
func (s *Store) Add(e Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = append(s.entries, e)
}

func (s *Store) seen(h http.Header, selector string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Headers = append(s.Headers, h.Clone())
	if selector != "" {
		s.Selectors = append(s.Selectors, selector)
	}
}

// Merge is the entries' profiles of type typeID (NAME:SAMPLE_TYPE:…)
// whose labels match selector, in [start, end), merged and cut down to
// the one sample type; nil when none match.
func (s *Store) Merge(typeID, selector string, start, end time.Time) (*profile.Profile, error) {
	ms, err := ParseSelector(selector)
	if err != nil {
		return nil, err
	}
	f := strings.Split(typeID, ":")
	if len(f) < 5 {
		return nil, fmt.Errorf("profile type %q: want NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT", typeID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var ps []*profile.Profile
	for _, e := range s.entries {
		if e.Name != f[0] || e.Time.Before(start) || !e.Time.Before(end) || !matches(ms, e.Labels) {
			continue
		}
		if p := only(e.Profile, f[1]); p != nil {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return nil, nil
	}
	return profile.Merge(ps)
}

// Values are the distinct values of label name among entries in
// [start, end) (all time when both are zero).
func (s *Store) Values(name string, start, end time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := map[string]bool{}
	for _, e := range s.entries {
		if !(start.IsZero() && end.IsZero()) && (e.Time.Before(start) || !e.Time.Before(end)) {
			continue
		}
		if v, ok := e.Labels[name]; ok {
			set[v] = true
		}
	}
	out := slices.AppendSeq(make([]string, 0, len(set)), maps.Keys(set)) // [], not nil, when empty
	slices.Sort(out)
	return out
}

// only is p with its values of sample type typ alone, nil without it.
func only(p *profile.Profile, typ string) *profile.Profile {
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == typ {
			idx = i
		}
	}
	if idx < 0 {
		return nil
	}
	c := p.Copy()
	c.SampleType = []*profile.ValueType{c.SampleType[idx]}
	c.DefaultSampleType = ""
	for _, smp := range c.Sample {
		smp.Value = []int64{smp.Value[idx]}
	}
	return c
}

// Matcher is one label matcher of a selector.
type Matcher struct {
	Name, Op, Value string
	re              *regexp.Regexp
}

// ParseSelector reads {name="value", name!="v", name=~"re", name!~"re"}.
func ParseSelector(sel string) ([]Matcher, error) {
	sel = strings.TrimSpace(sel)
	if !strings.HasPrefix(sel, "{") || !strings.HasSuffix(sel, "}") {
		return nil, fmt.Errorf("label selector %q: want {name=\"value\",…}", sel)
	}
	rest := strings.TrimSpace(sel[1 : len(sel)-1])
	var out []Matcher
	for rest != "" {
		i := strings.IndexAny(rest, "=!")
		if i <= 0 {
			return nil, fmt.Errorf("label selector %q: a matcher without a name", sel)
		}
		m := Matcher{Name: strings.TrimSpace(rest[:i])}
		rest = rest[i:]
		for _, op := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(rest, op) {
				m.Op, rest = op, strings.TrimSpace(rest[len(op):])
				break
			}
		}
		q, err := strconv.QuotedPrefix(rest)
		if m.Op == "" || err != nil {
			return nil, fmt.Errorf("label selector %q: want name=\"value\"", sel)
		}
		m.Value, _ = strconv.Unquote(q)
		if m.Op == "=~" || m.Op == "!~" {
			if m.re, err = regexp.Compile("^(?:" + m.Value + ")$"); err != nil {
				return nil, fmt.Errorf("label selector %q: %v", sel, err)
			}
		}
		out = append(out, m)
		rest = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest[len(q):]), ","))
	}
	return out, nil
}

func matches(ms []Matcher, labels map[string]string) bool {
	for _, m := range ms {
		v := labels[m.Name]
		ok := false
		switch m.Op {
		case "=":
			ok = v == m.Value
		case "!=":
			ok = v != m.Value
		case "=~":
			ok = m.re.MatchString(v)
		case "!~":
			ok = !m.re.MatchString(v)
		}
		if !ok {
			return false
		}
	}
	return true
}

// Pyroscope is the store behind Pyroscope's querier API, served by the
// official module's generated Connect handler.
func (s *Store) Pyroscope() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(querierv1connect.NewQuerierServiceHandler(&pyroscope{store: s}))
	return mux
}

type pyroscope struct {
	querierv1connect.UnimplementedQuerierServiceHandler
	store *Store
}

func (p *pyroscope) tenant(h http.Header, selector string) error {
	p.store.seen(h, selector)
	if p.store.Tenant != "" && h.Get("X-Scope-OrgID") != p.store.Tenant {
		return connect.NewError(connect.CodeUnauthenticated, fmt.Errorf("no org id"))
	}
	return nil
}

func (p *pyroscope) SelectMergeProfile(_ context.Context,
	req *connect.Request[querierv1.SelectMergeProfileRequest]) (*connect.Response[googlev1.Profile], error) {
	m := req.Msg
	if err := p.tenant(req.Header(), m.LabelSelector); err != nil {
		return nil, err
	}
	if m.End <= m.Start {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("start must be before end"))
	}
	merged, err := p.store.Merge(m.ProfileTypeID, m.LabelSelector, time.UnixMilli(m.Start), time.UnixMilli(m.End))
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	out := &googlev1.Profile{}
	if merged != nil {
		var b bytes.Buffer
		if err := merged.WriteUncompressed(&b); err != nil {
			return nil, connect.NewError(connect.CodeInternal, err)
		}
		if err := proto.Unmarshal(b.Bytes(), out); err != nil {
			return nil, connect.NewError(connect.CodeInternal, err)
		}
	}
	return connect.NewResponse(out), nil
}

func (p *pyroscope) LabelValues(_ context.Context,
	req *connect.Request[typesv1.LabelValuesRequest]) (*connect.Response[typesv1.LabelValuesResponse], error) {
	if err := p.tenant(req.Header(), ""); err != nil {
		return nil, err
	}
	m := req.Msg
	return connect.NewResponse(&typesv1.LabelValuesResponse{Names: p.store.Values(m.Name, time.UnixMilli(m.Start),
		time.UnixMilli(m.End))}), nil
}

// Parca is the store behind Parca's QueryService (Query, Values), in
// Connect's unary JSON protocol.
func (s *Store) Parca() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /parca.query.v1alpha1.QueryService/Query", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Mode, ReportType string }
		var raw map[string]json.RawMessage
		if !decode(w, r, &raw) || json.Unmarshal(raw["mode"], &req.Mode) != nil || json.Unmarshal(raw["reportType"], &req.ReportType) != nil {
			connectFail(w, http.StatusBadRequest, "invalid_argument", "want mode and reportType")
			return
		}
		var merge struct {
			Query      string
			Start, End time.Time
		}
		if json.Unmarshal(raw["merge"], &merge) != nil {
			connectFail(w, http.StatusBadRequest, "invalid_argument", "merge: want query, start, end")
			return
		}
		s.seen(r.Header, merge.Query)
		if req.Mode != "MODE_MERGE" || req.ReportType != "REPORT_TYPE_PPROF" {
			connectFail(w, http.StatusBadRequest, "invalid_argument", "this test server merges to pprof only")
			return
		}
		typeID, selector, ok := strings.Cut(merge.Query, "{")
		if !ok {
			selector = "}"
		}
		if !merge.End.After(merge.Start) {
			connectFail(w, http.StatusBadRequest, "invalid_argument", "start must be before end")
			return
		}
		merged, err := s.Merge(typeID, "{"+selector, merge.Start, merge.End)
		if err != nil {
			connectFail(w, http.StatusBadRequest, "invalid_argument", err.Error())
			return
		}
		var b bytes.Buffer
		if merged == nil {
			merged = &profile.Profile{}
		}
		if err := merged.Write(&b); err != nil {
			connectFail(w, http.StatusInternalServerError, "internal", err.Error())
			return
		}
		reply(w, map[string]any{"pprof": b.Bytes(), "total": "0", "filtered": "0"})
	})
	mux.HandleFunc("POST /parca.query.v1alpha1.QueryService/Values", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			LabelName  string    `json:"labelName"`
			Start, End time.Time `json:"-"`
		}
		var raw map[string]json.RawMessage
		if !decode(w, r, &raw) || json.Unmarshal(raw["labelName"], &req.LabelName) != nil {
			connectFail(w, http.StatusBadRequest, "invalid_argument", "want labelName")
			return
		}
		json.Unmarshal(raw["start"], &req.Start)
		json.Unmarshal(raw["end"], &req.End)
		s.seen(r.Header, "")
		reply(w, map[string]any{"labelValues": s.Values(req.LabelName, req.Start, req.End)})
	})
	return mux
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.Header.Get("Content-Type") != "application/json" {
		connectFail(w, http.StatusUnsupportedMediaType, "unknown", "want application/json")
		return false
	}
	return json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(v) == nil
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func connectFail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"code": code, "message": msg})
}
