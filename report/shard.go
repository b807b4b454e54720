package report

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/probehq/probe/result"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/probehq/probe/lib/hdrlog"
)

// A shard's report is a run's report with report.json's "shard" and two
// HdrHistogram interval logs beside it, from which probe merge adds the
// shards' histograms exactly.
const (
	// ShardLog holds each operation's histograms: latency/OP (from the
	// intended send time), service/OP (from the actual send) and
	// timeouts/OP (the service times of the calls that timed out).
	ShardLog = "latency.hlog"
	// SecondsLog holds the per-second series' histograms, second/I.
	SecondsLog = "per-second.hlog"
)

// Shard is report.json's "shard": which part of which run this report is,
// and what every shard of that run must share.
type Shard struct {
	Index int    `json:"index"`
	Count int    `json:"count"`
	RunID string `json:"run_id"`
	// ConfigHash is the SHA-256 of Config: two shards of one run have the
	// same.
	ConfigHash string `json:"config_hash"`
	// Config is what must be equal on every shard: the target, the
	// microload and its flags, the duration, the total rate and clients,
	// the histograms' settings.
	Config map[string]string `json:"config"`
	// Clients and Rate are this shard's part.
	Clients int     `json:"clients"`
	Rate    float64 `json:"rate,omitempty"`
	// WindowStart is when this shard's measured window opened, by its
	// own clock.
	WindowStart time.Time `json:"window_start"`
	Profiled    bool      `json:"profiled"`
	Histograms  string    `json:"histograms"` // the interval log of the operations' histograms
	Seconds     string    `json:"per_second_histograms,omitempty"`
}

// Histogram settings of the logs: a shard refuses to write, and the merge
// to read, any other (histograms add exactly only bucket for bucket).
var (
	OpSettings     = hdrlog.Settings{Lowest: 1, Highest: int64(5 * time.Minute / time.Microsecond), Digits: 3}
	SecondSettings = hdrlog.Settings{Lowest: 1, Highest: int64(5 * time.Minute / time.Microsecond), Digits: 1}
)

// ConfigHash is the hash of a shard's configuration: each key and value
// in key order.
func ConfigHash(config map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(config)) {
		fmt.Fprintf(h, "%q=%q\n", k, config[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// AttachShard makes r a shard's report of run: s as report.json's
// "shard", the histogram settings added to its configuration and hashed,
// and the interval logs of run's histograms among the report's files.
func (r *Run) AttachShard(run *result.Run, s Shard) error {
	s.Config = maps.Clone(s.Config)
	if s.Config == nil {
		s.Config = map[string]string{}
	}
	s.Config["shards"] = strconv.Itoa(s.Count) // merge holds a shard's count to it
	s.Config["histograms"] = OpSettings.String() + " µs"
	s.Config["per_second_histograms"] = SecondSettings.String() + " µs"
	s.ConfigHash = ConfigHash(s.Config)
	s.WindowStart = run.Start.UTC()
	end := run.Start.Add(run.Duration)
	var entries []hdrlog.Entry
	add := func(kind, op string, h *hdrhistogram.Histogram) error {
		if h == nil {
			return nil
		}
		if got := hdrlog.Of(h); got != OpSettings {
			return fmt.Errorf("%s of %s has settings %v, not %v", kind, op, got, OpSettings)
		}
		entries = append(entries, hdrlog.Entry{Tag: kind + "/" + op, Start: run.Start, End: end, Histogram: h})
		return nil
	}
	for _, op := range run.Ops {
		for _, err := range []error{add("latency", op.Name, op.Latency), add("service", op.Name, op.Service),
			add("timeouts", op.Name, op.Timeouts)} {
			if err != nil {
				return err
			}
		}
	}
	log, err := hdrlog.Encode(run.Start, entries)
	if err != nil {
		return err
	}
	var seconds []hdrlog.Entry
	for i, sec := range run.Seconds {
		if sec.Latency != nil && sec.Latency.TotalCount() > 0 {
			seconds = append(seconds, hdrlog.Entry{Tag: fmt.Sprintf("second/%d", i), Start: run.Start.Add(sec.At),
				End: run.Start.Add(sec.At + sec.Width), Histogram: sec.Latency})
		}
	}
	secLog, err := hdrlog.Encode(run.Start, seconds)
	if err != nil {
		return err
	}
	if r.files == nil {
		r.files = map[string][]byte{}
	}
	r.files[ShardLog], r.files[SecondsLog] = log, secLog
	s.Histograms, s.Seconds = ShardLog, SecondsLog
	r.Shard = &s
	return nil
}

// OpTag splits a log's tag into its kind and operation.
func OpTag(tag string) (kind, op string, ok bool) {
	kind, op, ok = strings.Cut(tag, "/")
	return kind, op, ok && op != ""
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
