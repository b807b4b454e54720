package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/probehq/probe/lib/hdrlog"
	"github.com/probehq/probe/probes"
)

// probe merge: the shards' reports of one run made into the report one
// generator would have written. What adds does so exactly — the
// histograms bucket for bucket, the counts, errors, bytes and each
// second's requests — and what belongs to the target (its profiles and
// findings, its process) comes from the shard that profiled it.

// ShardRun is one shard's report folder as read back.
type ShardRun struct {
	Dir    string
	Report *RunReport
	ops    map[string]*shardOp // by operation
	second map[int]*hdrhistogram.Histogram
}

type shardOp struct {
	latency, service, timeouts *hdrhistogram.Histogram
}

// ErrNotShard is a report folder that holds no shard's report.
var ErrNotShard = errors.New("not a shard's report")

// ReadShard reads the shard report in dir: report.json and its two
// histogram logs, checked against each other (each operation's latency
// histogram holds as many values as report.json counts calls).
func ReadShard(dir string) (*ShardRun, error) {
	js, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no report.json: not a report folder", dir)
	}
	if err != nil {
		return nil, err
	}
	var head struct {
		Microload string          `json:"microload"`
		Shard     json.RawMessage `json:"shard"`
		Runs      json.RawMessage `json:"runs"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return nil, fmt.Errorf("%s: report.json: %v", dir, err)
	}
	if head.Runs != nil {
		return nil, fmt.Errorf("%s is probe all's report: merge each microload's folder (%s/NAME) with the same one of the other shards",
			dir, dir)
	}
	if head.Shard == nil {
		return nil, fmt.Errorf("%s: %w (run with --shard I/N)", dir, ErrNotShard)
	}
	r := &RunReport{}
	if err := json.Unmarshal(js, r); err != nil {
		return nil, fmt.Errorf("%s: report.json: %v", dir, err)
	}
	s := r.Shard
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return nil, fmt.Errorf("%s: shard %d/%d is not a shard", dir, s.Index, s.Count)
	}
	if ConfigHash(s.Config) != s.ConfigHash {
		return nil, fmt.Errorf("%s: report.json's shard configuration does not match its hash (edited or corrupt)", dir)
	}
	sr := &ShardRun{Dir: dir, Report: r, ops: map[string]*shardOp{}, second: map[int]*hdrhistogram.Histogram{}}
	entries, err := readLog(dir, s.Histograms, opSettings)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		kind, op, ok := opTag(e.Tag)
		if !ok {
			return nil, fmt.Errorf("%s: %s: a histogram tagged %q", dir, s.Histograms, e.Tag)
		}
		o := sr.ops[op]
		if o == nil {
			o = &shardOp{}
			sr.ops[op] = o
		}
		switch kind {
		case "latency":
			o.latency = e.Histogram
		case "service":
			o.service = e.Histogram
		case "timeouts":
			o.timeouts = e.Histogram
		default:
			return nil, fmt.Errorf("%s: %s: a histogram tagged %q", dir, s.Histograms, e.Tag)
		}
	}
	for _, row := range r.Operations {
		o := sr.ops[row.Op]
		if o == nil || o.latency == nil || o.service == nil {
			return nil, fmt.Errorf("%s: %s has no histograms of %s", dir, s.Histograms, row.Op)
		}
		if o.latency.TotalCount() != row.Calls || o.service.TotalCount() != row.Calls {
			return nil, fmt.Errorf("%s: %s holds %d latencies of %s, report.json counts %d calls (corrupt or of another run)",
				dir, s.Histograms, o.latency.TotalCount(), row.Op, row.Calls)
		}
	}
	if len(sr.ops) != len(r.Operations) {
		return nil, fmt.Errorf("%s: %s has histograms of operations report.json does not list", dir, s.Histograms)
	}
	if s.Seconds != "" {
		entries, err := readLog(dir, s.Seconds, secondSettings)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			var i int
			if _, err := fmt.Sscanf(e.Tag, "second/%d", &i); err != nil || i < 0 || i >= len(r.PerSecond) {
				return nil, fmt.Errorf("%s: %s: a histogram tagged %q", dir, s.Seconds, e.Tag)
			}
			sr.second[i] = e.Histogram
		}
	}
	return sr, nil
}

// readLog reads one of a shard's logs; a name that leaves the folder is
// refused (report.json says which file it is).
func readLog(dir, name string, want hdrlog.Settings) ([]hdrlog.Entry, error) {
	if name == "" || !filepath.IsLocal(name) {
		return nil, fmt.Errorf("%s: report.json names histograms %q, not a file of the folder", dir, name)
	}
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", dir, err)
	}
	defer f.Close()
	entries, err := hdrlog.Read(io.LimitReader(f, 1<<30), want)
	if err != nil {
		return nil, fmt.Errorf("%s: %s is corrupt: %v", filepath.Join(dir, name), name, err)
	}
	return entries, nil
}

// Merge is report.json's "merge" of a merged report: the run, its shards
// and what each contributed.
type Merge struct {
	RunID      string            `json:"run_id"`
	ConfigHash string            `json:"config_hash"`
	Config     map[string]string `json:"config"`
	Count      int               `json:"count"`
	Shards     []MergedShard     `json:"shards"`
	Missing    []int             `json:"missing,omitempty"` // shard indexes not given: the figures are without them
}

// MergedShard is one shard's part of a merged run.
type MergedShard struct {
	Index    int     `json:"index"`
	Dir      string  `json:"dir"`
	Clients  int     `json:"clients"`
	Rate     float64 `json:"rate,omitempty"`
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	P99      float64 `json:"p99_ms"`
	Profiled bool    `json:"profiled"`
	// WindowStart is when its window opened by its own clock; ClockOffsetMS
	// is that less the earliest shard's: how far apart the shards started,
	// clock differences between their machines included.
	WindowStart   time.Time `json:"window_start"`
	ClockOffsetMS float64   `json:"clock_offset_ms"`
}

// MergedRun is the report of a run merged from its shards: a run's
// report, with "merge" added.
type MergedRun struct {
	*RunReport
	Merge Merge `json:"merge"`

	log, secLog []byte
}

// MergeError is shards that are not of one run, or not of the same
// settings: nothing was merged.
type MergeError struct{ msg string }

func (e MergeError) Error() string { return e.msg }

// MergeShards merges the shards of one run. Shards of two runs, of other
// settings or the same shard twice are refused (MergeError); a shard
// missing from the run is a shard-missing warning naming it.
func MergeShards(shards []*ShardRun) (*MergedRun, error) {
	if len(shards) == 0 {
		return nil, MergeError{"no shards to merge"}
	}
	shards = slices.Clone(shards)
	sort.SliceStable(shards, func(i, j int) bool { return shards[i].Report.Shard.Index < shards[j].Report.Shard.Index })
	first := shards[0]
	fs := first.Report.Shard
	seen := map[int]string{}
	for _, s := range shards {
		sh := s.Report.Shard
		switch {
		case sh.RunID != fs.RunID:
			return nil, MergeError{fmt.Sprintf("shards of two runs: %s is of run %q, %s of run %q", first.Dir, fs.RunID, s.Dir, sh.RunID)}
		case sh.ConfigHash != fs.ConfigHash:
			return nil, MergeError{fmt.Sprintf("%s and %s were run with different settings (%s): they cannot be merged",
				first.Dir, s.Dir, configDiff(fs.Config, sh.Config))}
		case seen[sh.Index] != "":
			return nil, MergeError{fmt.Sprintf("%s and %s are both shard %d/%d", seen[sh.Index], s.Dir, sh.Index, sh.Count)}
		}
		seen[sh.Index] = s.Dir
	}
	m := Merge{RunID: fs.RunID, ConfigHash: fs.ConfigHash, Config: fs.Config, Count: fs.Count}
	for i := range fs.Count {
		if seen[i] == "" {
			m.Missing = append(m.Missing, i)
		}
	}
	run, profiled := mergedRun(shards)
	a := Analysis{}
	if profiled != nil {
		pr := profiled.Report
		a.Findings, a.Unexplained, a.Timeline = pr.Findings, pr.Unexplained, pr.Timeline
		a.Files = map[string][]byte{}
		for _, name := range pr.ProfileFiles {
			if !filepath.IsLocal(name) {
				continue
			}
			if b, err := os.ReadFile(filepath.Join(profiled.Dir, name)); err == nil {
				a.Files[name] = b
			}
		}
	}
	rep := FromRun(run, a)
	rep.Crashes = nonNil(rep.Crashes)
	if profiled != nil {
		rep.TargetProcess = profiled.Report.TargetProcess
	}
	for _, s := range shards {
		if s.Report.TargetProcess != nil && rep.TargetProcess == nil {
			rep.TargetProcess = s.Report.TargetProcess // the target is on that shard's machine
		}
		rep.Machine.OthersCPUCores = max(rep.Machine.OthersCPUCores, s.Report.Machine.OthersCPUCores)
	}
	earliest := first.Report.Shard.WindowStart
	for _, s := range shards {
		if s.Report.Shard.WindowStart.Before(earliest) {
			earliest = s.Report.Shard.WindowStart
		}
	}
	var spread time.Duration
	for _, s := range shards {
		sh, r := s.Report.Shard, s.Report
		offset := sh.WindowStart.Sub(earliest)
		spread = max(spread, offset)
		m.Shards = append(m.Shards, MergedShard{Index: sh.Index, Dir: s.Dir, Clients: sh.Clients, Rate: sh.Rate, Requests: r.Latency.Requests,
			Errors: r.Latency.Errors, P99: r.Latency.P99, Profiled: sh.Profiled, WindowStart: sh.WindowStart,
			ClockOffsetMS: float64(offset.Microseconds()) / 1000})
	}
	for _, i := range m.Missing {
		rep.Warn("shard-missing", fmt.Sprintf("shard %d/%d is missing: the figures are of %d of the %d shards' load", i, fs.Count, len(shards), fs.Count))
	}
	if spread > time.Second {
		rep.Warn("shards-apart", fmt.Sprintf("the shards' windows opened up to %.1f s apart (by their own clocks): each second of the per-second series adds seconds that were not simultaneous", spread.Seconds()))
	}
	mr := &MergedRun{RunReport: rep, Merge: m}
	var err error
	if mr.log, mr.secLog, err = mergedLogs(run); err != nil {
		return nil, err
	}
	return mr, nil
}

// configDiff names the settings a and b differ in.
func configDiff(a, b map[string]string) string {
	var out []string
	keys := slices.Sorted(maps.Keys(maps.Collect(func(yield func(string, string) bool) {
		for k, v := range a {
			yield(k, v)
		}
		for k, v := range b {
			yield(k, v)
		}
	})))
	for _, k := range keys {
		if a[k] != b[k] {
			out = append(out, fmt.Sprintf("%s %q vs %q", k, a[k], b[k]))
		}
		if len(out) == 3 {
			break
		}
	}
	if len(out) == 0 {
		return "their configuration hashes differ"
	}
	return strings.Join(out, "; ")
}

// mergedRun is the run the shards make together, and the shard that
// profiled the target (nil: none did).
func mergedRun(shards []*ShardRun) (*probes.Run, *ShardRun) {
	first := shards[0].Report
	run := &probes.Run{Microload: first.Microload, Target: first.Target, AcceptEncoding: first.AcceptEncoding, Mode: first.Mode,
		Errors: map[string]int64{}, Start: shards[0].Report.Shard.WindowStart}
	var profiled *ShardRun
	ops := map[string]*probes.OpStats{}
	digests := map[string]*probes.Digest{}
	var digestOrder []string
	for _, s := range shards {
		r := s.Report
		if r.Shard.Profiled && profiled == nil {
			profiled = s
		}
		run.Concurrency += r.Concurrency
		run.Clients += r.Connections.Clients
		run.Rate += r.Rate
		run.ConnsOpened += r.Connections.Opened
		run.WireBytes += r.Bytes.Wire
		run.Decoded += r.Bytes.Decoded
		run.GeneratorCPU += time.Duration(r.Generator.CPUSeconds * float64(time.Second))
		run.CPUs += r.Generator.CPUs
		run.MachineCPUs = max(run.MachineCPUs, r.Machine.Cores)
		run.Duration = max(run.Duration, time.Duration(math.Round(r.DurationS*1e6))*time.Microsecond)
		for reason, n := range r.Errors {
			run.Errors[reason] += n
		}
		label := fmt.Sprintf("shard %d/%d: ", r.Shard.Index, r.Shard.Count)
		for _, w := range r.Warnings {
			run.Warn(w.Kind, label+w.Message)
		}
		if r.Ended != "" && run.Ended == "" {
			run.Ended = label + r.Ended
		}
		for _, row := range r.Operations {
			h := s.ops[row.Op]
			op := ops[row.Op]
			if op == nil {
				op = &probes.OpStats{Name: row.Op, Setup: row.Setup, Latency: newOpHistogram(), Service: newOpHistogram()}
				ops[row.Op] = op
				run.Ops = append(run.Ops, op)
			}
			op.Calls += row.Calls
			op.Errors += row.Errors
			op.Latency.Merge(h.latency)
			op.Service.Merge(h.service)
			if h.timeouts != nil {
				if op.Timeouts == nil {
					op.Timeouts = newOpHistogram()
				}
				op.Timeouts.Merge(h.timeouts)
			}
		}
		for _, d := range r.ReplyDigests {
			got := digests[d.Key]
			if got == nil {
				got = &probes.Digest{Key: d.Key}
				digests[d.Key] = got
				digestOrder = append(digestOrder, d.Key)
			}
			// Replies are known by digest only on their shard: the distinct
			// count merged is the most any shard saw, a lower bound.
			got.Requests += d.Requests
			got.Distinct = max(got.Distinct, d.Distinct)
		}
		for i, p := range r.PerSecond {
			for len(run.Seconds) <= i {
				run.Seconds = append(run.Seconds, probes.Second{})
			}
			sec := &run.Seconds[i]
			sec.Requests += p.Requests
			sec.Errors += p.Errors
			if h := s.second[i]; h != nil {
				if sec.Latency == nil {
					sec.Latency = hdrhistogram.New(secondSettings.Lowest, secondSettings.Highest, secondSettings.Digits)
				}
				sec.Latency.Merge(h)
			}
		}
	}
	width := time.Second
	if ps := first.PerSecond; len(ps) > 1 {
		width = time.Duration(math.Round((ps[1].T-ps[0].T)*1e3)) * time.Millisecond
	}
	for i := range run.Seconds {
		run.Seconds[i].At, run.Seconds[i].Width = time.Duration(i)*width, width
	}
	for _, k := range digestOrder {
		run.Digests = append(run.Digests, *digests[k])
	}
	return run, profiled
}

func newOpHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(opSettings.Lowest, opSettings.Highest, opSettings.Digits)
}

// mergedLogs are the merged run's histograms as the shards' logs hold them.
func mergedLogs(run *probes.Run) ([]byte, []byte, error) {
	end := run.Start.Add(run.Duration)
	var entries []hdrlog.Entry
	for _, op := range run.Ops {
		entries = append(entries, hdrlog.Entry{Tag: "latency/" + op.Name, Start: run.Start, End: end, Histogram: op.Latency},
			hdrlog.Entry{Tag: "service/" + op.Name, Start: run.Start, End: end, Histogram: op.Service})
		if op.Timeouts != nil {
			entries = append(entries, hdrlog.Entry{Tag: "timeouts/" + op.Name, Start: run.Start, End: end, Histogram: op.Timeouts})
		}
	}
	log, err := hdrlog.Encode(run.Start, entries)
	if err != nil {
		return nil, nil, err
	}
	var seconds []hdrlog.Entry
	for i, s := range run.Seconds {
		if s.Latency != nil {
			seconds = append(seconds, hdrlog.Entry{Tag: fmt.Sprintf("second/%d", i), Start: run.Start.Add(s.At), End: run.Start.Add(s.At + s.Width), Histogram: s.Latency})
		}
	}
	secLog, err := hdrlog.Encode(run.Start, seconds)
	return log, secLog, err
}

// JSON is report.json: the run's, with "merge".
func (m *MergedRun) JSON() ([]byte, error) { return marshal(m) }

// Markdown is the run's report.md with a section on the shards.
func (m *MergedRun) Markdown() string {
	var b strings.Builder
	b.WriteString(m.RunReport.Markdown())
	b.WriteString("\n## Shards\n\n")
	fmt.Fprintf(&b, "Merged from %d of %d shards of run `%s` (configuration %s): histograms added bucket for bucket, counts and each second summed.\n\n",
		len(m.Merge.Shards), m.Merge.Count, m.Merge.RunID, shortHash(m.Merge.ConfigHash))
	t := m.shardsTable()
	b.WriteString(t.Markdown())
	return b.String()
}

func (m *MergedRun) shardsTable() *Table {
	t := &Table{Columns: []Column{{Title: "shard"}, {Title: "clients", Right: true}, {Title: "requests", Right: true}, {Title: "errors", Right: true},
		{Title: "p99", Right: true}, {Title: "clock offset", Right: true}, {Title: "folder"}}}
	for _, s := range m.Merge.Shards {
		name := fmt.Sprintf("%d/%d", s.Index, m.Merge.Count)
		if s.Profiled {
			name += " (profiled)"
		}
		t.AddRow(name, fmt.Sprint(s.Clients), fmt.Sprint(s.Requests), fmt.Sprint(s.Errors), fmtMS(s.P99),
			fmt.Sprintf("%+.0f ms", s.ClockOffsetMS), s.Dir)
	}
	for _, i := range m.Merge.Missing {
		t.AddRow(fmt.Sprintf("%d/%d", i, m.Merge.Count), "", "", "", "", "", "missing")
	}
	return t
}

func shortHash(h string) string {
	if i := strings.IndexByte(h, ':'); i >= 0 && len(h) > i+13 {
		return h[:i+13]
	}
	return h
}

// WriteTable is the run's table, then the shards.
func (m *MergedRun) WriteTable(w io.Writer) {
	m.RunReport.WriteTable(w)
	fmt.Fprintf(w, "merged %d of %d shards of run %s:\n", len(m.Merge.Shards), m.Merge.Count, m.Merge.RunID)
	var b bytes.Buffer
	m.shardsTable().Text(&b)
	w.Write(b.Bytes())
}

// Files are the run's, with the merged histogram logs.
func (m *MergedRun) Files() (map[string][]byte, error) {
	files, err := m.RunReport.Files()
	if err != nil {
		return nil, err
	}
	files[ShardLog], files[SecondsLog] = m.log, m.secLog
	files["report.html"] = []byte(m.HTML())
	return files, nil
}

// HTML is the run's report.html with the shards' table before its end.
func (m *MergedRun) HTML() string {
	page := m.RunReport.HTML()
	section := fmt.Sprintf("<h2>Shards</h2><p>Merged from %d of %d shards of run <code>%s</code>: histograms added bucket for bucket, counts and each second summed.</p>%s",
		len(m.Merge.Shards), m.Merge.Count, html.EscapeString(m.Merge.RunID), m.shardsTable().HTML())
	end := strings.LastIndex(page, "</body>")
	if end < 0 {
		return page + section
	}
	return page[:end] + section + page[end:]
}

// MarshalJSON is the run's report with "merge" added: RunReport's own
// MarshalJSON (production shares on its findings), promoted through the
// embedding, would otherwise leave Merge out.
func (m MergedRun) MarshalJSON() ([]byte, error) {
	base, err := json.Marshal(m.RunReport)
	if err != nil {
		return nil, err
	}
	merge, err := json.Marshal(m.Merge)
	if err != nil {
		return nil, err
	}
	if len(base) < 2 || base[len(base)-1] != '}' {
		return nil, fmt.Errorf("a run's report is not a JSON object")
	}
	out := append([]byte{}, base[:len(base)-1]...)
	if len(base) > 2 {
		out = append(out, ',')
	}
	out = append(append(append(out, `"merge":`...), merge...), '}')
	return out, nil
}
