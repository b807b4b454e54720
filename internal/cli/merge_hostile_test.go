package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/shardreport/shardtest"
)

// probe merge of crafted shard folders (issue 34, items 8 and 9): each is
// refused in one line, exit 2, and nothing is written: the output folder
// is not made, or is left as it was.

// craftedShard writes shard index of count of run "r": calls requests of
// GET /x, its files (profiles) beside it.
func craftedShard(t *testing.T, index, count int, calls int64, files map[string][]byte) string {
	t.Helper()
	return shardtest.Write(t, shardtest.Run(shardtest.Op("GET /x", calls, 1000)), index, count, files)
}

// mergeRefused runs probe merge of dirs and wants exit 2, one line holding
// want, and no folder written: a new --out not made, an existing one left
// as it was.
func mergeRefused(t *testing.T, what string, dirs []string, want string) {
	t.Helper()
	for _, existing := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "merged")
		if existing {
			os.Mkdir(out, 0o755)
			os.WriteFile(filepath.Join(out, "kept"), []byte("mine"), 0o644)
		}
		code, stdout, stderr := probeCmd.Run(t, context.Background(), append([]string{"merge", "--out", out}, dirs...)...)
		if code != exitUsage || stdout != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q: want exit %d and one line", what, code, stdout, stderr, exitUsage)
		}
		clitest.OneLine(t, stderr, want)
		entries, err := os.ReadDir(out)
		switch {
		case !existing && !os.IsNotExist(err):
			t.Errorf("%s: --out was made (%v)", what, err)
		case existing && (len(entries) != 1 || entries[0].Name() != "kept"):
			t.Errorf("%s: the existing --out now holds %v", what, entries)
		}
	}
}

func TestMergeRefusesCraftedShards(t *testing.T) {
	fine := func() []string { return []string{craftedShard(t, 0, 2, 100, nil), craftedShard(t, 1, 2, 100, nil)} }
	if code, _, stderr := probeCmd.Run(t, context.Background(), append([]string{"merge", "--out", filepath.Join(t.TempDir(), "m"),
		"--fail-on", "p99_ms>1000"}, fine()...)...); code != 0 {
		t.Fatalf("two genuine shards: exit %d, %s", code, stderr)
	}

	// shard.count 10^15: every missing index was listed.
	dirs := fine()
	shardtest.EditReport(t, dirs[1], func(r map[string]any) {
		sh := r["shard"].(map[string]any)
		sh["count"] = json.Number("1000000000000000")
		sh["config"].(map[string]any)["shards"] = "1000000000000000"
	})
	mergeRefused(t, "count 10^15", dirs, "shard 1/1000000000000000 is not a shard (1 to 10000 shards)")

	// A latency.hlog of one histogram repeated, 35 MB: over 50 GB decoded.
	dirs = fine()
	log, _ := os.ReadFile(filepath.Join(dirs[0], report.ShardLog))
	i := bytes.Index(log, []byte("Tag="))
	line := log[i : i+bytes.IndexByte(log[i:], '\n')+1]
	var crafted bytes.Buffer
	crafted.Write(log[:i])
	for crafted.Len() < 35<<20 {
		crafted.Write(line)
	}
	os.WriteFile(filepath.Join(dirs[0], report.ShardLog), crafted.Bytes(), 0o644)
	crafted = bytes.Buffer{}
	mergeRefused(t, "repeated histograms", dirs, `tag "latency/GET /x" a second time`)

	// Counts that overflow int64 when added.
	dirs = []string{craftedShard(t, 0, 2, 5e18, nil), craftedShard(t, 1, 2, 5e18, nil)}
	mergeRefused(t, "5e18 calls on each of two shards", dirs, "the shards' counts add up past 2^63")

	// report.json a link to /dev/zero, on the first folder (read to tell
	// a suite) and on another.
	for k := range 2 {
		dirs = fine()
		os.Remove(filepath.Join(dirs[k], "report.json"))
		os.Symlink("/dev/zero", filepath.Join(dirs[k], "report.json"))
		mergeRefused(t, fmt.Sprintf("report.json of shard %d a link to /dev/zero", k), dirs, "report.json is a link")
	}

	// A duration of no run.
	for _, d := range []string{"0", "1e300"} {
		dirs = fine()
		shardtest.EditReport(t, dirs[1], func(r map[string]any) { r["duration_s"] = json.Number(d) })
		mergeRefused(t, "duration_s "+d, dirs, "is not a run's duration (more than 0, at most 48h0m0s)")
	}
}

// Profile files that are links to a mode-600 secret (the Kubernetes
// example's merge Job runs as root: its service-account token) are
// refused, not copied at mode 644; so are names that leave the folder.
func TestMergeRefusesLinkedProfiles(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secret, []byte("SECRET-SERVICE-ACCOUNT-TOKEN"), 0o600); err != nil {
		t.Fatal(err)
	}
	prof := shardtest.Profile(t)
	profiled := func() []string {
		return []string{craftedShard(t, 0, 2, 100, map[string][]byte{"cpu.pb.gz": prof}), craftedShard(t, 1, 2, 100, nil)}
	}

	out := filepath.Join(t.TempDir(), "m")
	code, _, stderr := probeCmd.Run(t, context.Background(), append([]string{"merge", "--out", out}, profiled()...)...)
	if code != 0 {
		t.Fatalf("genuine shards: exit %d, %s", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "cpu.pb.gz")); !bytes.Equal(b, prof) {
		t.Fatal("a genuine profile was not copied")
	}

	dirs := profiled()
	os.Remove(filepath.Join(dirs[0], "cpu.pb.gz"))
	os.Symlink(secret, filepath.Join(dirs[0], "cpu.pb.gz"))
	mergeRefused(t, "a profile linked to a secret", dirs, "cpu.pb.gz is a link")

	for _, name := range []string{"../../token", secret} {
		dirs = profiled()
		shardtest.EditReport(t, dirs[0], func(r map[string]any) { r["profile_files"] = []any{name} })
		mergeRefused(t, "profile file "+name, dirs, "not a file of the folder")
	}
}
