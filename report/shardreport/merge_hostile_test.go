package shardreport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/shardreport/shardtest"
	"github.com/probehq/probe/result"
)

// Crafted shard folders (issue 34, items 8 and 9): each attack is a
// genuine shard's folder edited as a hostile one would be; each must be
// refused by ReadShard or MergeDirs, in time and memory of its bounds.

// genuineShard writes shard index of count of run "r" into a new folder.
func genuineShard(t *testing.T, index, count int, files map[string][]byte) string {
	t.Helper()
	run := shardRun("x", index, 200, rand.New(rand.NewPCG(uint64(index), 7)), newOpHistogram())
	return shardtest.Write(t, run, index, count, files)
}

func wantErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %v, want %q", what, err, want)
	}
	if err != nil && strings.Contains(err.Error(), "\n") {
		t.Errorf("%s: the error is not one line: %q", what, err)
	}
}

// A shard count of 10^15 (every index but one a missing shard to list) is
// refused from report.json, as is one the configuration does not say.
func TestReadShardBoundsTheShardCount(t *testing.T) {
	dir := genuineShard(t, 0, 2, nil)
	shardtest.EditReport(t, dir, func(r map[string]any) {
		r["shard"].(map[string]any)["count"] = json.Number("1000000000000000")
	})
	_, err := ReadShard(dir)
	wantErr(t, "count 10^15", err, "shard 0/1000000000000000 is not a shard (1 to 10000 shards)")

	dir = genuineShard(t, 0, 2, nil)
	shardtest.EditReport(t, dir, func(r map[string]any) { r["shard"].(map[string]any)["count"] = json.Number("5000") })
	_, err = ReadShard(dir)
	wantErr(t, "count 5000 of a run of 2", err, `shard 0/5000 of a run configured for "2" shards`)

	dir = genuineShard(t, 0, 2, nil)
	os.WriteFile(filepath.Join(dir, "report.json"), []byte(`{"shard": null}`), 0o644)
	_, err = ReadShard(dir)
	wantErr(t, "shard null", err, "not a shard's report")

	// Within the bounds, 9,999 missing shards are one warning naming 20.
	var dirs []string
	for i := range 2 {
		dirs = append(dirs, genuineShard(t, i, result.MaxShards, nil))
	}
	m, err := MergeDirs(dirs)
	if err != nil {
		t.Fatal(err)
	}
	var missing []result.Warning
	for _, w := range m.Warnings {
		if w.Kind == "shard-missing" {
			missing = append(missing, w)
		}
	}
	if len(missing) != 1 || !strings.Contains(missing[0].Message, "shards 2/10000, 3/10000") ||
		!strings.Contains(missing[0].Message, "and 9978 more are missing") {
		t.Errorf("9,998 missing shards: warnings %v", missing)
	}
	var table bytes.Buffer
	m.WriteTable(&table)
	if n := strings.Count(table.String(), "missing"); n > 30 {
		t.Errorf("the table lists %d missing shards, one a line", n)
	}
}

// A latency.hlog of one histogram line repeated (35 MB of them, 160 KiB
// each decoded: over 50 GB) is refused at the second, having decoded one;
// so is a histogram of an operation report.json does not list, and a log
// over 64 MiB.
func TestReadShardRefusesRepeatedHistogramsAsRead(t *testing.T) {
	dir := genuineShard(t, 0, 2, nil)
	path := filepath.Join(dir, report.ShardLog)
	log, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(log, []byte("Tag="))
	head, first := log[:i], log[i:i+bytes.IndexByte(log[i:], '\n')+1]
	var crafted bytes.Buffer
	crafted.Write(head)
	for crafted.Len() < 35<<20 {
		crafted.Write(first)
	}
	if err := os.WriteFile(path, crafted.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	crafted = bytes.Buffer{}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = ReadShard(dir)
	runtime.ReadMemStats(&after)
	wantErr(t, "a repeated histogram", err, `tag "latency/GET /x" a second time`)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("refusing 35 MB of repeated histograms allocated %d MB", grew>>20)
	}

	other := bytes.Replace(log, []byte("Tag=latency%2FGET%20%2Fx,"), []byte("Tag=latency%2Fother,"), 1)
	os.WriteFile(path, other, 0o644)
	_, err = ReadShard(dir)
	wantErr(t, "a histogram of no operation", err, `a histogram tagged "latency/other", of no operation report.json lists`)

	big, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	big.Write(log)
	big.Truncate(maxShardLog + 1) // sparse: 64 MiB of nothing
	big.Close()
	_, err = ReadShard(dir)
	wantErr(t, "a log over the cap", err, "latency.hlog is over 64 MiB")
}

// Counts that add past int64 over two shards (each within it) are refused,
// not wrapped into a negative count.
func TestMergeRefusesCountsThatOverflow(t *testing.T) {
	var dirs []string
	for i := range 2 {
		dirs = append(dirs, shardtest.Write(t, shardtest.Run(shardtest.Op("GET /x", 5e18, 1000)), i, 2, nil))
	}
	_, err := MergeDirs(dirs)
	wantErr(t, "5e18 calls twice", err, "the shards' counts add up past 2^63")

	// The errors' counts too.
	a, b := genuineShard(t, 0, 2, nil), genuineShard(t, 1, 2, nil)
	for _, d := range []string{a, b} {
		shardtest.EditReport(t, d, func(r map[string]any) {
			r["errors"] = map[string]any{"status 500": json.Number("9000000000000000000")}
		})
	}
	_, err = MergeDirs([]string{a, b})
	wantErr(t, "errors counted 9e18 twice", err, "the shards' counts add up past 2^63")

	shardtest.EditReport(t, a, func(r map[string]any) { r["errors"] = map[string]any{"status 500": json.Number("-3")} })
	_, err = ReadShard(a)
	wantErr(t, "a negative count", err, `errors: "status 500" counted -3 times`)
}

// A duration of 0, of 1e300 or negative is no run's: refused, not merged
// into an rps of 0.
func TestReadShardRefusesADurationOfNoRun(t *testing.T) {
	for _, d := range []string{"0", "1e300", "-1", "172801"} {
		dir := genuineShard(t, 0, 2, nil)
		shardtest.EditReport(t, dir, func(r map[string]any) { r["duration_s"] = json.Number(d) })
		_, err := ReadShard(dir)
		wantErr(t, "duration_s "+d, err, "is not a run's duration (more than 0, at most 48h0m0s)")
	}
}

// report.json or a log that is a link (to /dev/zero: endless) or a FIFO
// (its open would wait for a writer) is refused at once, unread.
func TestReadShardOpensNoLink(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		make       func(path string) error
	}{
		{"report.json", "report.json is a link", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{report.ShardLog, "latency.hlog is a link", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{report.SecondsLog, "per-second.hlog is a link", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"report.json", "report.json is not a regular file", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{report.ShardLog, "latency.hlog is not a regular file", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
	} {
		dir := genuineShard(t, 0, 2, nil)
		os.Remove(filepath.Join(dir, tc.name))
		if err := tc.make(filepath.Join(dir, tc.name)); err != nil {
			t.Fatal(err)
		}
		_, err := ReadShard(dir)
		wantErr(t, tc.name, err, tc.want)
		if IsSuite(dir) {
			t.Errorf("%s: a suite", tc.name)
		}
	}

	// A report.json over 16 MiB is refused from its size.
	dir := genuineShard(t, 0, 2, nil)
	os.Truncate(filepath.Join(dir, "report.json"), maxShardJSON+1)
	_, err := ReadShard(dir)
	wantErr(t, "report.json over the cap", err, "report.json is over 16 MiB")
}

// readInFolder stops at its cap even as the file grows under it: it reads
// at most cap+1 bytes of anything.
func TestReadInFolderStopsAtItsCap(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), bytes.Repeat([]byte("x"), 100), 0o644)
	if _, err := readInFolder(dir, "f", 99); err == nil || !strings.Contains(err.Error(), "f is over 99 B") {
		t.Errorf("100 bytes under a cap of 99: %v", err)
	}
	if b, err := readInFolder(dir, "f", 100); err != nil || len(b) != 100 {
		t.Errorf("100 bytes under a cap of 100: %d, %v", len(b), err)
	}
	for _, name := range []string{"../f", "/etc/passwd", "a/../../f", ""} {
		if _, err := readInFolder(dir, name, 100); err == nil || !strings.Contains(err.Error(), "not a file of the folder") {
			t.Errorf("%q: %v", name, err)
		}
	}
}

// readCapped reads at most cap+1 bytes of a file that claims fewer and
// never ends (one that grows as it is read).
func TestReadCappedStopsAtItsCap(t *testing.T) {
	var given int64
	endless := readerOf(func(p []byte) (int, error) {
		given += int64(len(p))
		return len(p), nil
	})
	if _, err := readCapped(endless, "f", 0, 1<<20); err == nil || !strings.Contains(err.Error(), "f is over 1.0 MiB") {
		t.Errorf("an endless file: %v", err)
	}
	if given > 1<<20+64<<10 {
		t.Errorf("read %d bytes of an endless file under a cap of 1 MiB", given)
	}
}

type readerOf func([]byte) (int, error)

func (f readerOf) Read(p []byte) (int, error) { return f(p) }

// The profiled shard's profile files are copied only as regular files
// inside its folder that parse: one that is a link to a mode-600 secret
// (or sits in a folder that is a link) is refused, not copied; so is a
// name with .. or an absolute one, and a profile that does not parse.
func TestMergeCopiesNoLinkedProfile(t *testing.T) {
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "token")
	if err := os.WriteFile(secret, []byte("SECRET-TOKEN-0123"), 0o600); err != nil {
		t.Fatal(err)
	}
	prof := shardtest.Profile(t)

	// Genuine: the profile and the flame graph are copied.
	flame := []byte("<!doctype html>\n<html></html>")
	dirs := []string{genuineShard(t, 0, 2, map[string][]byte{"cpu.pb.gz": prof, "flame.html": flame}),
		genuineShard(t, 1, 2, nil)}
	m, err := MergeDirs(dirs)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := m.Files()
	if !bytes.Equal(files["cpu.pb.gz"], prof) || !bytes.Equal(files["flame.html"], flame) {
		t.Fatalf("a genuine profile was not copied: %v", m.ProfileFiles)
	}

	for _, tc := range []struct {
		what  string
		craft func(dir string)
		want  string
	}{
		{"a link to a secret", func(dir string) {
			os.Remove(filepath.Join(dir, "cpu.pb.gz"))
			os.Symlink(secret, filepath.Join(dir, "cpu.pb.gz"))
		}, "cpu.pb.gz is a link"},
		{"a hard link to a secret", func(dir string) {
			os.Remove(filepath.Join(dir, "cpu.pb.gz"))
			if err := os.Link(secret, filepath.Join(dir, "cpu.pb.gz")); err != nil {
				t.Fatal(err)
			}
		}, "cpu.pb.gz has 2 hard links"},
		{"a flame graph that is not one", func(dir string) {
			os.WriteFile(filepath.Join(dir, "flame.html"), []byte("SECRET-TOKEN-0123"), 0o644)
			shardtest.EditReport(t, dir, func(r map[string]any) { r["profile_files"] = []any{"cpu.pb.gz", "flame.html"} })
		}, "flame.html is not a flame graph of probe's"},
		{"a folder that is a link", func(dir string) {
			os.Symlink(secretDir, filepath.Join(dir, "profiles"))
			os.WriteFile(filepath.Join(secretDir, "token.pb.gz"), prof, 0o600)
			shardtest.EditReport(t, dir, func(r map[string]any) { r["profile_files"] = []any{"profiles/token.pb.gz"} })
		}, "profiles is a link"},
		{"a name with ..", func(dir string) {
			shardtest.EditReport(t, dir, func(r map[string]any) { r["profile_files"] = []any{"../../" + filepath.Base(secretDir) + "/token"} })
		}, "not a file of the folder"},
		{"an absolute name", func(dir string) {
			shardtest.EditReport(t, dir, func(r map[string]any) { r["profile_files"] = []any{secret} })
		}, "not a file of the folder"},
		{"no profile", func(dir string) {
			os.WriteFile(filepath.Join(dir, "cpu.pb.gz"), []byte("SECRET-TOKEN-0123"), 0o644)
		}, "cpu.pb.gz: not a pprof profile"},
		{"neither profile nor flame graph", func(dir string) {
			os.WriteFile(filepath.Join(dir, "token"), []byte("x"), 0o644)
			shardtest.EditReport(t, dir, func(r map[string]any) { r["profile_files"] = []any{"token"} })
		}, "neither a profile (.pb.gz) nor a flame graph (.html)"},
	} {
		dirs := []string{genuineShard(t, 0, 2, map[string][]byte{"cpu.pb.gz": prof}), genuineShard(t, 1, 2, nil)}
		tc.craft(dirs[0])
		m, err := MergeDirs(dirs)
		wantErr(t, tc.what, err, tc.want)
		if m != nil {
			files, _ := m.Files()
			for name, b := range files {
				if bytes.Contains(b, []byte("SECRET-TOKEN")) {
					t.Errorf("%s: the merged %s holds the secret", tc.what, name)
				}
			}
		}
	}
}

// A run of probe all's that is a link to another folder is refused.
func TestMergeSuitesOpensNoLinkedRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var dirs []string
	elsewhere := genuineShard(t, 1, 2, nil)
	for i := range 2 {
		r := writeShard(t, "", shardRun("a", i, 100, rng, newOpHistogram()), i, 2, "s1", map[string]string{"command": "all"})
		dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
		if err := report.WriteFolder(dir, report.NewSuite("http://127.0.0.1:1", []*report.Run{r})); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	if _, err := MergeSuites(dirs); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(dirs[1], "a"))
	os.Symlink(elsewhere, filepath.Join(dirs[1], "a"))
	_, err := MergeSuites(dirs)
	wantErr(t, "a run that is a link", err, "a is a link")
}

// The hdrlog cap the merge reads with is hdrlog's own structural bound:
// an endless log of distinct listed tags is not possible (three an
// operation), so the cap is the operations report.json lists, at most
// maxShardOps.
func TestReadShardBoundsOperations(t *testing.T) {
	dir := genuineShard(t, 0, 2, nil)
	shardtest.EditReport(t, dir, func(r map[string]any) {
		row := r["operations"].([]any)[0]
		var rows []any
		for i := range maxShardOps + 1 {
			c := map[string]any{}
			for k, v := range row.(map[string]any) {
				c[k] = v
			}
			c["op"] = fmt.Sprintf("GET /%d", i)
			rows = append(rows, c)
		}
		r["operations"] = rows
	})
	_, err := ReadShard(dir)
	wantErr(t, "257 operations", err, "257 operations, over 256")

	// Nor may shards of other operations each add up to more together.
	var dirs []string
	for i := range 2 {
		run := shardtest.Run()
		for k := range maxShardOps {
			run.Ops = append(run.Ops, shardtest.Op(fmt.Sprintf("GET /%d/%d", i, k), 1, 10))
		}
		dirs = append(dirs, shardtest.Write(t, run, i, 2, nil))
	}
	_, err = MergeDirs(dirs)
	wantErr(t, "two shards of 256 operations each", err, "the shards list over 256 operations together")
}

// A crafted report.json's text reaches the merged report and the terminal
// without the characters a terminal acts on (ESC[2J clears the screen, CR
// rewrites the line): a warning, an error reason, the run's end, the
// target.
func TestMergeScrubsAShardsText(t *testing.T) {
	dirs := []string{genuineShard(t, 0, 2, nil), genuineShard(t, 1, 2, nil)}
	shardtest.EditReport(t, dirs[1], func(r map[string]any) {
		r["warnings"] = []any{map[string]any{"kind": "x\x1b[2J", "message": "\x1b[2Jall clear\r\x9b\nprobe: all checks passed"}}
		r["errors"] = map[string]any{"status 500\x1b]0;owned\x07": json.Number("1")}
		r["ended"] = "\x1b[31mended\u2028"
	})
	m, err := MergeDirs(dirs)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	m.WriteTable(&out)
	js, _ := m.JSON()
	for what, text := range map[string]string{"table": out.String(), "report.json": string(js), "report.md": m.Markdown()} {
		if strings.ContainsAny(text, "\x1b\r\x07\u2028\u009b") {
			t.Errorf("the merged %s holds a control character: %q", what, text)
		}
	}
	if strings.Contains(out.String(), "\nprobe: all checks passed") {
		t.Errorf("a shard's warning began a line of its own:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "[2Jall clear") {
		t.Errorf("the warning's text is gone from the table:\n%s", out.String())
	}
}
