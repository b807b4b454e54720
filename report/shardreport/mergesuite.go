package shardreport

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/probehq/probe/report"
)

// probe all's shards: each shard's folder is a suite, its microloads'
// reports in folders of their own; they merge microload by microload.

// IsSuite says whether dir holds probe all's report.
func IsSuite(dir string) bool {
	js, err := readInFolder(dir, "report.json", maxShardJSON)
	if err != nil {
		return false
	}
	var head struct {
		Microload string          `json:"microload"`
		Runs      json.RawMessage `json:"runs"`
	}
	return json.Unmarshal(js, &head) == nil && head.Microload == "all" && head.Runs != nil
}

// maxSuiteRuns bounds the runs (microloads) of probe all's report.json a
// merge reads.
const maxSuiteRuns = 256

// MergedSuite is probe all's report merged from its shards: a suite of
// the merged runs, with each microload's "merge".
type MergedSuite struct {
	*report.Suite
	Merge map[string]report.Merge `json:"merge"` // by microload

	runs []*MergedRun
}

// MergeSuites merges probe all's shard folders: each microload's folders
// as MergeShards does (a microload some shards skipped is merged from the
// others, a shard-missing warning naming them); one skipped by every
// shard stays skipped.
func MergeSuites(dirs []string) (*MergedSuite, error) {
	type suiteHead struct {
		Target  string           `json:"target"`
		Skipped []report.Skipped `json:"skipped"`
		Runs    []struct {
			Microload string `json:"microload"`
		} `json:"runs"`
	}
	var order []string
	byMicroload := map[string][]*ShardRun{}
	sums := map[string]*shardSums{}
	skipped := map[string]report.Skipped{}
	target := ""
	for _, d := range dirs {
		if !IsSuite(d) {
			return nil, MergeError{fmt.Sprintf("%s is not probe all's report, and the others are: merge folders of one command", d)}
		}
		js, err := readInFolder(d, "report.json", maxShardJSON)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", d, err)
		}
		var h suiteHead
		if err := json.Unmarshal(js, &h); err != nil {
			return nil, fmt.Errorf("%s: report.json: %v", d, err)
		}
		scrub(reflect.ValueOf(&h)) // its target and skipped runs' reasons are shown
		target = h.Target
		for _, sk := range h.Skipped {
			skipped[sk.Microload] = sk
		}
		if len(h.Runs) > maxSuiteRuns {
			return nil, fmt.Errorf("%s: report.json lists %d runs, over %d", d, len(h.Runs), maxSuiteRuns)
		}
		listed := map[string]bool{}
		for _, r := range h.Runs {
			if !filepath.IsLocal(r.Microload) || strings.ContainsAny(r.Microload, `/\`) {
				return nil, fmt.Errorf("%s: a run named %q", d, r.Microload)
			}
			if listed[r.Microload] {
				return nil, fmt.Errorf("%s: report.json lists the run %q twice", d, r.Microload)
			}
			listed[r.Microload] = true
			if sums[r.Microload] == nil {
				sums[r.Microload] = newShardSums()
			}
			sr, err := readShard(d, r.Microload, sums[r.Microload])
			if err != nil {
				return nil, err
			}
			if !slices.Contains(order, r.Microload) {
				order = append(order, r.Microload)
			}
			byMicroload[r.Microload] = append(byMicroload[r.Microload], sr)
		}
	}
	ms := &MergedSuite{Merge: map[string]report.Merge{}}
	var runs []*report.Run
	for _, name := range order {
		m, err := MergeShards(byMicroload[name])
		if err != nil {
			return nil, err
		}
		ms.runs = append(ms.runs, m)
		ms.Merge[name] = m.Merge
		runs = append(runs, m.Run)
		delete(skipped, name)
	}
	if len(runs) == 0 {
		return nil, MergeError{"the shards measured no microload: nothing to merge"}
	}
	var requests int64 // the suite's latency adds its runs'
	for _, r := range runs {
		if r.Latency.Requests > math.MaxInt64-requests {
			return nil, errOverflow
		}
		requests += r.Latency.Requests
	}
	ms.Suite = report.NewSuite(target, runs)
	for _, sk := range skipped {
		ms.Skipped = append(ms.Skipped, sk)
	}
	slices.SortFunc(ms.Skipped, func(a, b report.Skipped) int { return strings.Compare(a.Microload, b.Microload) })
	return ms, nil
}

// JSON is report.json: the suite's, with "merge".
func (m *MergedSuite) JSON() ([]byte, error) { return report.Marshal(m) }

// Markdown is the suite's report.md with the shards of each microload.
func (m *MergedSuite) Markdown() string {
	var b strings.Builder
	b.WriteString(m.Suite.Markdown())
	for _, r := range m.runs {
		fmt.Fprintf(&b, "\n## Shards of %s\n\nMerged from %d of %d shards of run `%s`.\n\n", r.Microload, len(r.Merge.Shards),
			r.Merge.Count, r.Merge.RunID)
		b.WriteString(r.shardsTable().Markdown())
	}
	return b.String()
}

// WriteTable is the suite's table, then the shards of each microload.
func (m *MergedSuite) WriteTable(w io.Writer) {
	m.Suite.WriteTable(w)
	for _, r := range m.runs {
		fmt.Fprintf(w, "%s: merged %d of %d shards of run %s:\n", r.Microload, len(r.Merge.Shards), r.Merge.Count, r.Merge.RunID)
		r.shardsTable().Text(w)
	}
}

// Files are the suite's, with each microload's merged histogram logs and
// its report.json with its "merge".
func (m *MergedSuite) Files() (map[string][]byte, error) {
	files, err := m.Suite.Files()
	if err != nil {
		return nil, err
	}
	for _, r := range m.runs {
		js, err := r.JSON()
		if err != nil {
			return nil, err
		}
		files[path.Join(r.Microload, "report.json")] = js
		files[path.Join(r.Microload, "report.md")] = []byte(r.Markdown())
		files[path.Join(r.Microload, "report.html")] = []byte(r.HTML())
		files[path.Join(r.Microload, report.ShardLog)], files[path.Join(r.Microload, report.SecondsLog)] = r.log, r.secLog
	}
	return files, nil
}
