// Package shardreport is probe merge: shard folders read within bounds and
// merged into one run or suite report, written with package report.
package shardreport

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
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/dustin/go-humanize"

	"github.com/probehq/probe/lib/hdrlog"
	"github.com/probehq/probe/lib/pprofio"
	"github.com/probehq/probe/lib/textline"
)

// probe merge: the shards' reports of one run made into the report one
// generator would have written. What adds does so exactly — the
// histograms bucket for bucket, the counts, errors, bytes and each
// second's requests — and what belongs to the target (its profiles and
// findings, its process) comes from the shard that profiled it.

// ShardRun is one shard's report folder as read back.
type ShardRun struct {
	Dir    string
	Report *report.Run

	root, sub string     // Dir is root/sub: root as given, sub a run of probe all's within it (or "")
	sums      *shardSums // its histograms, added to those of the shards read with it
}

type shardOp struct {
	latency, service, timeouts *hdrhistogram.Histogram
}

// shardSums are the histograms of the shards read together (one
// microload's), each shard's added as it is read: a merge holds one
// shard's histograms beside the sums, never every shard's.
type shardSums struct {
	ops     map[string]*shardOp
	second  map[int]*hdrhistogram.Histogram
	members int // the shards added
}

func newShardSums() *shardSums {
	return &shardSums{ops: map[string]*shardOp{}, second: map[int]*hdrhistogram.Histogram{}}
}

// Bounds of what a merge reads (besides the files' sizes, shardfile.go):
// past them a shard is refused as crafted or corrupt; what probe writes
// stays well inside each.
const (
	// maxShardOps bounds the operations of a shard's report.json: each
	// has up to three histograms of 160 KiB in latency.hlog.
	maxShardOps = 256
	// maxShardDuration bounds a shard's measured seconds: --duration is
	// at most 24 h.
	maxShardDuration = 48 * time.Hour
	// maxShardCPU bounds a shard's generator CPU seconds.
	maxShardCPU = 1e9
	// maxShardProfiles bounds the profile files copied from the shard
	// that profiled the target.
	maxShardProfiles = 10_000
)

// ErrNotShard is a report folder that holds no shard's report.
var ErrNotShard = errors.New("not a shard's report")

// ReadShard reads the shard report in dir: report.json and its two
// histogram logs, checked against each other (each operation's latency
// histogram holds as many values as report.json counts calls).
func ReadShard(dir string) (*ShardRun, error) {
	return readShard(dir, "", newShardSums())
}

// readShards reads the shards of one run, their histograms added as read.
func readShards(dirs []string) ([]*ShardRun, error) {
	sums := newShardSums()
	var shards []*ShardRun
	for _, d := range dirs {
		sh, err := readShard(d, "", sums)
		if err != nil {
			return nil, err
		}
		shards = append(shards, sh)
	}
	return shards, nil
}

// MergeDirs reads the shards' report folders of one run and merges them
// (MergeShards), each shard's histograms added to the others' as it is
// read.
func MergeDirs(dirs []string) (*MergedRun, error) {
	shards, err := readShards(dirs)
	if err != nil {
		return nil, err
	}
	return MergeShards(shards)
}

// readShard reads the shard report in root/sub (sub a path of the folder,
// or "": root itself) and adds its histograms to sums. Every file of the
// folder is read as shardfile.go says (no link followed, a size cap);
// the histograms are counted as they are decoded (at most three an
// operation report.json lists, one a second of its series), a tag given
// twice is refused as read, and every figure the merge adds is checked.
func readShard(root, sub string, sums *shardSums) (*ShardRun, error) {
	dir := filepath.Join(root, filepath.FromSlash(sub))
	in := func(name string) string { return path.Join(sub, name) }
	js, err := readInFolder(root, in("report.json"), maxShardJSON)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no report.json: not a report folder", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", dir, err)
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
	r := &report.Run{}
	if err := json.Unmarshal(js, r); err != nil {
		return nil, fmt.Errorf("%s: report.json: %v", dir, err)
	}
	js, head.Shard = nil, nil
	s := r.Shard
	if s == nil { // "shard": null
		return nil, fmt.Errorf("%s: %w (run with --shard I/N)", dir, ErrNotShard)
	}
	if s.Count < 1 || s.Count > result.MaxShards || s.Index < 0 || s.Index >= s.Count {
		return nil, fmt.Errorf("%s: shard %d/%d is not a shard (1 to %d shards)", dir, s.Index, s.Count, result.MaxShards)
	}
	if report.ConfigHash(s.Config) != s.ConfigHash {
		return nil, fmt.Errorf("%s: report.json's shard configuration does not match its hash (edited or corrupt)", dir)
	}
	if n := s.Config["shards"]; n != strconv.Itoa(s.Count) {
		return nil, fmt.Errorf("%s: shard %d/%d of a run configured for %q shards (edited or corrupt)", dir, s.Index, s.Count, n)
	}
	config := s.Config // kept as hashed: shown only quoted (configDiff) or in JSON
	scrub(reflect.ValueOf(r))
	s.Config = config
	if err := checkShardFigures(r); err != nil {
		return nil, fmt.Errorf("%s: report.json: %v", dir, err)
	}
	listed := map[string]bool{}
	for _, row := range r.Operations {
		if listed[row.Op] {
			return nil, fmt.Errorf("%s: report.json lists operation %q twice", dir, row.Op)
		}
		listed[row.Op] = true
	}
	ops := map[string]*shardOp{}
	err = readLog(root, sub, s.Histograms, report.OpSettings, 3*len(r.Operations), func(tag string) error {
		kind, op, ok := report.OpTag(tag)
		if !ok || !listed[op] || kind != "latency" && kind != "service" && kind != "timeouts" {
			return fmt.Errorf("a histogram tagged %q, of no operation report.json lists", tag)
		}
		return nil
	}, func(e hdrlog.Entry) error {
		kind, op, _ := report.OpTag(e.Tag)
		o := ops[op]
		if o == nil {
			o = &shardOp{}
			ops[op] = o
		}
		switch kind {
		case "latency":
			o.latency = e.Histogram
		case "service":
			o.service = e.Histogram
		default:
			o.timeouts = e.Histogram
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, row := range r.Operations {
		o := ops[row.Op]
		if o == nil || o.latency == nil || o.service == nil {
			return nil, fmt.Errorf("%s: %s has no histograms of %s", dir, s.Histograms, row.Op)
		}
		if o.latency.TotalCount() != row.Calls || o.service.TotalCount() != row.Calls {
			return nil, fmt.Errorf("%s: %s holds %d latencies of %s, report.json counts %d calls (corrupt or of another run)",
				dir, s.Histograms, o.latency.TotalCount(), row.Op, row.Calls)
		}
	}
	seconds := map[int]*hdrhistogram.Histogram{}
	if s.Seconds != "" {
		err := readLog(root, sub, s.Seconds, report.SecondSettings, len(r.PerSecond), func(tag string) error {
			if _, ok := secondTag(tag, len(r.PerSecond)); !ok {
				return fmt.Errorf("a histogram tagged %q", tag)
			}
			return nil
		}, func(e hdrlog.Entry) error {
			i, _ := secondTag(e.Tag, len(r.PerSecond))
			seconds[i] = e.Histogram
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if err := sums.add(ops, seconds); err != nil {
		return nil, fmt.Errorf("%s: %v", dir, err)
	}
	return &ShardRun{Dir: dir, Report: r, root: root, sub: sub, sums: sums}, nil
}

// secondTag is the second of a per-second histogram's tag, second/I with
// 0 ≤ I < n, written as probe writes it (no sign, no leading zero).
func secondTag(tag string, n int) (int, bool) {
	rest, ok := strings.CutPrefix(tag, "second/")
	i, err := strconv.Atoi(rest)
	return i, ok && err == nil && i >= 0 && i < n && strconv.Itoa(i) == rest
}

// checkShardFigures refuses what a shard's report.json cannot hold: a
// duration that is not a positive number of seconds within
// maxShardDuration, a negative count, more operations or seconds than a
// run makes, figures that would not survive the merge's arithmetic.
func checkShardFigures(r *report.Run) error {
	d := r.DurationS
	switch {
	case !(d > 0) || d > maxShardDuration.Seconds(): // !(d > 0): NaN too
		return fmt.Errorf("duration_s %g is not a run's duration (more than 0, at most %v)", d, maxShardDuration)
	case len(r.Operations) > maxShardOps:
		return fmt.Errorf("%d operations, over %d", len(r.Operations), maxShardOps)
	case len(r.PerSecond) > result.ShardSeconds:
		return fmt.Errorf("%d points a second, over a run's %d", len(r.PerSecond), result.ShardSeconds)
	case !(r.Rate >= 0) || r.Rate > result.MaxShardRate:
		return fmt.Errorf("rate %g is not a shard's rate (0 to %g)", r.Rate, float64(result.MaxShardRate))
	case !(r.Generator.CPUSeconds >= 0) || r.Generator.CPUSeconds > maxShardCPU:
		return fmt.Errorf("cpu_s %g is not a generator's CPU seconds", r.Generator.CPUSeconds)
	case r.Concurrency < 0 || r.Connections.Clients < 0 || r.Connections.Opened < 0 || r.Generator.CPUs < 0 ||
		r.Machine.Cores < 0:
		return errors.New("a negative count of clients, connections or CPUs")
	case r.Bytes.Wire < 0 || r.Bytes.Decoded < 0:
		return errors.New("a negative count of bytes")
	}
	for _, row := range r.Operations {
		if row.Calls < 0 || row.Errors < 0 {
			return fmt.Errorf("operation %q: %d calls, %d errors", row.Op, row.Calls, row.Errors)
		}
	}
	last := -1.0
	for _, p := range r.PerSecond {
		if !(p.T > last) || p.T > maxShardDuration.Seconds() || p.Requests < 0 || p.Errors < 0 {
			return fmt.Errorf("per_second: a point at %g s of %d requests, %d errors", p.T, p.Requests, p.Errors)
		}
		last = p.T
	}
	for reason, n := range r.Errors {
		if n < 0 {
			return fmt.Errorf("errors: %q counted %d times", reason, n)
		}
	}
	for _, d := range r.ReplyDigests {
		if d.Requests < 0 || d.Distinct < 0 {
			return fmt.Errorf("reply_digests: %q: %d requests, %d distinct", d.Key, d.Requests, d.Distinct)
		}
	}
	return nil
}

// errOverflow is a sum past int64: no run counts so much.
var errOverflow = errors.New("the shards' counts add up past 2^63 (crafted or corrupt)")

// add adds one shard's histograms to the sums, each sum checked before
// it is made; the shard's own are taken over where the sums had none.
func (s *shardSums) add(ops map[string]*shardOp, seconds map[int]*hdrhistogram.Histogram) error {
	for name, o := range ops {
		sum := s.ops[name]
		if sum == nil {
			if len(s.ops) == maxShardOps { // the shards of one run list the same operations
				return fmt.Errorf("the shards list over %d operations together", maxShardOps)
			}
			sum = &shardOp{}
			s.ops[name] = sum
		}
		for _, p := range []struct{ dst, h **hdrhistogram.Histogram }{{&sum.latency, &o.latency}, {&sum.service, &o.service},
			{&sum.timeouts, &o.timeouts}} {
			if err := addHistogram(p.dst, *p.h); err != nil {
				return err
			}
		}
	}
	for i, h := range seconds {
		dst := s.second[i]
		if err := addHistogram(&dst, h); err != nil {
			return err
		}
		s.second[i] = dst
	}
	s.members++
	return nil
}

func addHistogram(dst **hdrhistogram.Histogram, h *hdrhistogram.Histogram) error {
	switch {
	case h == nil:
		return nil
	case *dst == nil:
		*dst = h
		return nil
	case h.TotalCount() > math.MaxInt64-(*dst).TotalCount():
		return errOverflow
	}
	(*dst).Merge(h)
	return nil
}

// readLog reads one of a shard's logs through the folder's file cap,
// handing each histogram to each: at most max of them, each tag accepted
// by accept before it is decoded.
func readLog(root, sub, name string, want hdrlog.Settings, max int, accept func(string) error,
	each func(hdrlog.Entry) error) error {
	dir := filepath.Join(root, filepath.FromSlash(sub))
	if name == "" || !filepath.IsLocal(name) || strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("%s: report.json names histograms %q, not a file of the folder", dir, name)
	}
	f, st, err := openInFolder(root, path.Join(sub, name))
	if err != nil {
		return fmt.Errorf("%s: %v", dir, err)
	}
	defer f.Close()
	if st.Size > maxShardLog {
		return fmt.Errorf("%s: %s is over %s", dir, name, humanize.IBytes(maxShardLog))
	}
	err = hdrlog.ReadEach(f, want, hdrlog.Limits{Bytes: maxShardLog, Histograms: max, Accept: accept}, each)
	var tl *hdrlog.TooLargeError
	switch {
	case errors.As(err, &tl) && tl.What == "histograms":
		return fmt.Errorf("%s: %s holds more histograms than report.json's %d (crafted or corrupt)", dir, name, max)
	case errors.As(err, &tl):
		return fmt.Errorf("%s: %s is corrupt: %v", dir, name, err)
	case err != nil:
		return fmt.Errorf("%s: %s is corrupt: %v", filepath.Join(dir, name), name, err)
	}
	return nil
}

// MergedRun is the report of a run merged from its shards: a run's
// report, with "merge" added.
type MergedRun struct {
	*report.Run
	Merge report.Merge `json:"merge"`

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
	m := report.Merge{RunID: fs.RunID, ConfigHash: fs.ConfigHash, Config: fs.Config, Count: fs.Count}
	for i := range fs.Count {
		if seen[i] == "" {
			m.Missing = append(m.Missing, i)
		}
	}
	sums, err := shardsSums(shards)
	if err != nil {
		return nil, err
	}
	run, profiled, err := mergedRun(shards, sums)
	if err != nil {
		return nil, err
	}
	a := report.Analysis{}
	if profiled != nil {
		pr := profiled.Report
		a.Findings, a.Unexplained, a.Timeline = pr.Findings, pr.Unexplained, pr.Timeline
		if a.Files, err = profiled.profiles(); err != nil {
			return nil, err
		}
	}
	rep := report.FromRun(run, a)
	rep.Crashes = report.NonNil(rep.Crashes)
	if profiled != nil {
		rep.TargetProcess = profiled.Report.TargetProcess
	}
	if profiled != nil {
		rep.LeakCheck = profiled.Report.LeakCheck         // the leak look is the profiled shard's, as the findings are
		rep.ProfilingCost = profiled.Report.ProfilingCost // and so is what its profiling cost
	}
	for _, s := range shards {
		if s.Report.TargetProcess != nil && rep.TargetProcess == nil {
			rep.TargetProcess = s.Report.TargetProcess // the target is on that shard's machine
		}
		// A shard that knows the target's Go over one that does not.
		if rt := s.Report.TargetRuntime; rep.TargetRuntime == nil ||
			rep.TargetRuntime.GoVersion == "" && rt != nil && rt.GoVersion != "" {
			rep.TargetRuntime = rt
		}
		switch lane := s.Report.MCP; {
		case lane == nil:
		case rep.MCP == nil:
			rep.MCP = lane
		case *lane != *rep.MCP:
			rep.Warn("shards-mcp-lanes", fmt.Sprintf("shard %d/%d spoke MCP's %s lane, protocol %s, where another spoke the %s "+
				"lane, protocol %s: the merged figures mix them", s.Report.Shard.Index, s.Report.Shard.Count, lane.Lane,
				lane.ProtocolVersion, rep.MCP.Lane, rep.MCP.ProtocolVersion))
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
		m.Shards = append(m.Shards, report.MergedShard{Index: sh.Index, Dir: s.Dir, Clients: sh.Clients, Rate: sh.Rate, Requests: r.Latency.Requests,
			Errors: r.Latency.Errors, P99: r.Latency.P99, Profiled: sh.Profiled, WindowStart: sh.WindowStart,
			ClockOffsetMS: float64(offset.Microseconds()) / 1000})
	}
	if len(m.Missing) > 0 {
		rep.Warn("shard-missing", missingText(m.Missing, fs.Count, len(shards)))
	}
	if spread > time.Second {
		rep.Warn("shards-apart", fmt.Sprintf("the shards' windows opened up to %.1f s apart (by their own clocks): each second "+
			"of the per-second series adds seconds that were not simultaneous", spread.Seconds()))
	}
	mr := &MergedRun{Run: rep, Merge: m}
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
			out = append(out, fmt.Sprintf("%s %q vs %q", textline.Of(k, 0), a[k], b[k]))
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

// missingText is the shard-missing warning: the missing shards named, at
// most textline.MaxNames of them (a run may have 10,000 shards).
func missingText(missing []int, count, merged int) string {
	names := make([]string, len(missing))
	for k, i := range missing {
		names[k] = fmt.Sprintf("%d/%d", i, count)
	}
	subject := "shard " + names[0] + " is"
	if len(missing) > 1 {
		subject = "shards " + textline.Names(names, 0) + " are"
	}
	return fmt.Sprintf("%s missing: the figures are of %d of the %d shards' load", subject, merged, count)
}

// shardsSums are the histograms of shards added up: the sums they were
// read into when every shard of those sums is here (MergeDirs,
// MergeSuites), else a new sum of each one's.
func shardsSums(shards []*ShardRun) (*shardSums, error) {
	of := map[*shardSums]int{}
	for _, s := range shards {
		of[s.sums]++
	}
	if len(of) == 1 && of[shards[0].sums] == shards[0].sums.members {
		return shards[0].sums, nil
	}
	sum := newShardSums()
	for part, n := range of {
		if n != part.members {
			return nil, MergeError{"shards read together are merged together: these are some of them"}
		}
		ops := map[string]*shardOp{}
		for name, o := range part.ops {
			ops[name] = &shardOp{latency: copyOf(o.latency), service: copyOf(o.service), timeouts: copyOf(o.timeouts)}
		}
		seconds := map[int]*hdrhistogram.Histogram{}
		for i, h := range part.second {
			seconds[i] = copyOf(h)
		}
		if err := sum.add(ops, seconds); err != nil {
			return nil, err
		}
	}
	return sum, nil
}

func copyOf(h *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	if h == nil {
		return nil
	}
	return hdrhistogram.Import(h.Export())
}

// profiles are the profiled shard's profile files as the merged report
// keeps them: each named by a path inside its folder, opened without
// following a link, a regular file of no other hard link within
// maxShardProfile bytes (the copies within maxShardCopied), a profile
// (.pb.gz) that parses as one or a flame graph (.html) of probe's.
// Anything else is refused: a crafted folder, not a shard's.
func (s *ShardRun) profiles() (map[string][]byte, error) {
	names := s.Report.ProfileFiles
	if len(names) > maxShardProfiles {
		return nil, fmt.Errorf("%s: report.json lists %d profile files, over %d", s.Dir, len(names), maxShardProfiles)
	}
	files := map[string][]byte{}
	var total int64
	for _, name := range names {
		if !filepath.IsLocal(name) || strings.Contains(name, `\`) || path.Clean(name) != name {
			return nil, fmt.Errorf("%s: report.json lists profile file %q, not a file of the folder", s.Dir, name)
		}
		if !strings.HasSuffix(name, ".pb.gz") && !strings.HasSuffix(name, ".html") {
			return nil, fmt.Errorf("%s: report.json lists profile file %q, neither a profile (.pb.gz) nor a flame graph (.html)",
				s.Dir, name)
		}
		b, err := copyInFolder(s.root, path.Join(s.sub, name), maxShardProfile)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", s.Dir, err)
		}
		if total += int64(len(b)); total > maxShardCopied {
			return nil, fmt.Errorf("%s: its profile files are over %s together", s.Dir, humanize.IBytes(maxShardCopied))
		}
		if strings.HasSuffix(name, ".pb.gz") {
			if _, _, err := pprofio.Parse(b, maxShardProfile); err != nil {
				return nil, fmt.Errorf("%s: %s: %v", s.Dir, name, err)
			}
		} else if !bytes.HasPrefix(b, []byte("<!doctype html>")) {
			return nil, fmt.Errorf("%s: %s is not a flame graph of probe's", s.Dir, name)
		}
		files[name] = b
	}
	return files, nil
}

// mergedRun is the run the shards make together, its histograms sums',
// and the shard that profiled the target (nil: none did). Every count is
// added with a check: a sum past int64 is an error, not a wrapped count.
func mergedRun(shards []*ShardRun, sums *shardSums) (*result.Run, *ShardRun, error) {
	first := shards[0].Report
	run := &result.Run{Microload: first.Microload, Target: first.Target, AcceptEncoding: first.AcceptEncoding, Mode: first.Mode,
		Errors: map[string]int64{}, Start: shards[0].Report.Shard.WindowStart}
	var profiled *ShardRun
	ops := map[string]*result.OpStats{}
	digests := map[string]*result.Digest{}
	var digestOrder []string
	overflow := false
	add := func(dst *int64, v int64) {
		if v > math.MaxInt64-*dst {
			overflow = true
			return
		}
		*dst += v
	}
	addInt := func(dst *int, v int) {
		n := int64(*dst)
		add(&n, int64(v))
		*dst = int(n)
	}
	for _, s := range shards {
		r := s.Report
		if r.Shard.Profiled && profiled == nil {
			profiled = s
		}
		addInt(&run.Concurrency, r.Concurrency)
		addInt(&run.Clients, r.Connections.Clients)
		run.Rate += r.Rate // each at most result.MaxShardRate
		addInt(&run.ConnsOpened, r.Connections.Opened)
		add(&run.WireBytes, r.Bytes.Wire)
		add(&run.Decoded, r.Bytes.Decoded)
		cpu := int64(run.GeneratorCPU)
		add(&cpu, int64(r.Generator.CPUSeconds*float64(time.Second))) // each at most maxShardCPU
		run.GeneratorCPU = time.Duration(cpu)
		addInt(&run.CPUs, r.Generator.CPUs)
		run.MachineCPUs = max(run.MachineCPUs, r.Machine.Cores)
		run.Duration = max(run.Duration, time.Duration(math.Round(r.DurationS*1e6))*time.Microsecond) // at most maxShardDuration
		for reason, n := range r.Errors {
			v := run.Errors[reason]
			add(&v, n)
			run.Errors[reason] = v
		}
		label := fmt.Sprintf("shard %d/%d: ", r.Shard.Index, r.Shard.Count)
		for _, w := range r.Warnings {
			run.Warn(w.Kind, label+w.Message)
		}
		if r.Ended != "" && run.Ended == "" {
			run.Ended = label + r.Ended
		}
		for _, row := range r.Operations {
			op := ops[row.Op]
			if op == nil {
				h := sums.ops[row.Op]
				op = &result.OpStats{Name: row.Op, Setup: row.Setup, Latency: h.latency, Service: h.service, Timeouts: h.timeouts}
				ops[row.Op] = op
				run.Ops = append(run.Ops, op)
			}
			add(&op.Calls, row.Calls)
			add(&op.Errors, row.Errors)
		}
		for _, d := range r.ReplyDigests {
			got := digests[d.Key]
			if got == nil {
				got = &result.Digest{Key: d.Key}
				digests[d.Key] = got
				digestOrder = append(digestOrder, d.Key)
			}
			// Replies are known by digest only on their shard: the distinct
			// count merged is the most any shard saw, a lower bound.
			add(&got.Requests, d.Requests)
			got.Distinct = max(got.Distinct, d.Distinct)
		}
		for i, p := range r.PerSecond {
			for len(run.Seconds) <= i {
				run.Seconds = append(run.Seconds, result.Second{Latency: sums.second[len(run.Seconds)]})
			}
			sec := &run.Seconds[i]
			add(&sec.Requests, p.Requests)
			add(&sec.Errors, p.Errors)
		}
	}
	var requests int64 // the run's latency adds its measured operations' histograms
	for _, op := range run.Ops {
		if !op.Setup {
			add(&requests, op.Calls)
		}
	}
	if overflow {
		return nil, nil, errOverflow
	}
	for _, op := range run.Ops {
		if op.Latency.TotalCount() != op.Calls {
			return nil, nil, MergeError{fmt.Sprintf("the shards' histograms of %q hold %d latencies, their reports count %d calls",
				op.Name, op.Latency.TotalCount(), op.Calls)}
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
	return run, profiled, nil
}

func newOpHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(report.OpSettings.Lowest, report.OpSettings.Highest, report.OpSettings.Digits)
}

// mergedLogs are the merged run's histograms as the shards' logs hold them.
func mergedLogs(run *result.Run) ([]byte, []byte, error) {
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
			seconds = append(seconds, hdrlog.Entry{Tag: fmt.Sprintf("second/%d", i), Start: run.Start.Add(s.At),
				End: run.Start.Add(s.At + s.Width), Histogram: s.Latency})
		}
	}
	secLog, err := hdrlog.Encode(run.Start, seconds)
	return log, secLog, err
}

// JSON is report.json: the run's, with "merge".
func (m *MergedRun) JSON() ([]byte, error) { return report.Marshal(m) }

// Markdown is the run's report.md with a section on the shards.
func (m *MergedRun) Markdown() string {
	var b strings.Builder
	b.WriteString(m.Run.Markdown())
	b.WriteString("\n## Shards\n\n")
	fmt.Fprintf(&b, "Merged from %d of %d shards of run `%s` (configuration %s): histograms added bucket for bucket, counts and "+
		"each second summed.\n\n",
		len(m.Merge.Shards), m.Merge.Count, m.Merge.RunID, shortHash(m.Merge.ConfigHash))
	t := m.shardsTable()
	b.WriteString(t.Markdown())
	return b.String()
}

func (m *MergedRun) shardsTable() *report.Table {
	t := &report.Table{Columns: []report.Column{{Title: "shard"}, {Title: "clients", Right: true}, {Title: "requests", Right: true},
		{Title: "errors", Right: true},
		{Title: "p99", Right: true}, {Title: "clock offset", Right: true}, {Title: "folder"}}}
	for _, s := range m.Merge.Shards {
		name := fmt.Sprintf("%d/%d", s.Index, m.Merge.Count)
		if s.Profiled {
			name += " (profiled)"
		}
		t.AddRow(name, fmt.Sprint(s.Clients), fmt.Sprint(s.Requests), fmt.Sprint(s.Errors), report.FmtMS(s.P99),
			fmt.Sprintf("%+.0f ms", s.ClockOffsetMS), s.Dir)
	}
	for k, i := range m.Merge.Missing {
		if k == textline.MaxNames && len(m.Merge.Missing) > k+1 {
			t.AddRow(fmt.Sprintf("%d more", len(m.Merge.Missing)-k), "", "", "", "", "", "missing")
			break
		}
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
	m.Run.WriteTable(w)
	fmt.Fprintf(w, "merged %d of %d shards of run %s:\n", len(m.Merge.Shards), m.Merge.Count, m.Merge.RunID)
	var b bytes.Buffer
	m.shardsTable().Text(&b)
	w.Write(b.Bytes())
}

// Files are the run's, with the merged histogram logs.
func (m *MergedRun) Files() (map[string][]byte, error) {
	files, err := m.Run.Files()
	if err != nil {
		return nil, err
	}
	files[report.ShardLog], files[report.SecondsLog] = m.log, m.secLog
	files["report.html"] = []byte(m.HTML())
	return files, nil
}

// HTML is the run's report.html with the shards' table before its end.
func (m *MergedRun) HTML() string {
	page := m.Run.HTML()
	section := fmt.Sprintf("<h2>Shards</h2><p>Merged from %d of %d shards of run <code>%s</code>: histograms added bucket for "+
		"bucket, counts and each second summed.</p>%s",
		len(m.Merge.Shards), m.Merge.Count, html.EscapeString(m.Merge.RunID), m.shardsTable().HTML())
	end := strings.LastIndex(page, "</body>")
	if end < 0 {
		return page + section
	}
	return page[:end] + section + page[end:]
}

// MarshalJSON is the run's report with "merge" added: Run's own
// MarshalJSON (production shares on its findings), promoted through the
// embedding, would otherwise leave Merge out.
func (m MergedRun) MarshalJSON() ([]byte, error) {
	base, err := json.Marshal(m.Run)
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
