package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/probehq/probe/internal/testrepo"
	"github.com/probehq/probe/report/abreport"
)

// abReport is report.json of probe ab and probe compare.
type abReport = abreport.AB

// TestABAcrossGitRefs is the seed's June-against-October comparison on a
// repository made in the test: v2 does a tenth of v1's work.
func TestABAcrossGitRefs(t *testing.T) {
	repo := testrepo.GitServer(t)
	out := t.TempDir()
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "ab", "--git", repo, "--before-ref", "v1", "--after-ref", "v2",
		"--build", "go build -o {out} .", "--run", "{out} -addr {addr}", "http", "--path", "/work",
		"--runs", "4", "--duration", "1s", "--warmup", "200ms", "--concurrency", "4", "--json", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep abReport
	decodeStdout(t, "ab", stdout, &rep)
	if rep.Runs != 4 || !strings.HasPrefix(rep.Before, "v1 (") || !strings.HasPrefix(rep.After, "v2 (") {
		t.Errorf("runs %d, before %q, after %q", rep.Runs, rep.Before, rep.After)
	}
	// v2 does a tenth of v1's work: its CPU per request is lower. Whether
	// four runs a side reach significance is the statistics' business,
	// tested on fixed figures in analyzers; here the pipeline must carry
	// the figures through.
	found := false
	for _, c := range rep.Comparisons {
		if c.Metric == "cpu_per_req_ms" {
			found = true
			if c.Ratio <= 0 || c.Ratio >= 1 || c.Verdict == "worse" || c.PValue == nil {
				t.Errorf("cpu per request %+v", c)
			}
		}
	}
	if !found {
		t.Errorf("no cpu_per_req_ms among %+v", rep.Comparisons)
	}
	for _, f := range []string{"report.json", "report.md", "report.html", "runs/http/before-1/report.json", "runs/http/after-4/latency.hgrm"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	// The worktrees are gone.
	if wt, _ := exec.Command("git", "-C", repo, "worktree", "list").Output(); strings.Count(string(wt), "\n") != 1 {
		t.Errorf("worktrees left behind:\n%s", wt)
	}

	// probe compare on two single runs: figures side by side, no claim.
	code, stdout, stderr = probeCmd.Run(t, context.Background(), "compare", filepath.Join(out, "runs/http/before-1"),
		filepath.Join(out, "runs/http/after-1"), "--json", "--out", t.TempDir())
	if code != exitOK {
		t.Fatalf("compare: exit %d: %s", code, stderr)
	}
	rep = abReport{}
	decodeStdout(t, "compare", stdout, &rep)
	if len(rep.Comparisons) == 0 {
		t.Fatal("compare: no comparisons")
	}
	for _, c := range rep.Comparisons {
		if c.Significant || c.PValue != nil {
			t.Errorf("compare claimed %+v from single runs", c)
		}
	}
}

// run; the report names them and keeps the other side's figures.
func TestABVersionThatFails(t *testing.T) {
	victim := buildVictim(t)
	for _, tc := range []struct{ after, want string }{
		{"/nonexistent/server -addr {addr}", "does not start"},
		{victim + " -exit-after 300 -addr {addr}", "ended early"},
	} {
		out := t.TempDir()
		code, stdout, stderr := probeCmd.Run(t, context.Background(), "ab", "--before", victim+" -addr {addr}", "--after", tc.after,
			"http", "--path", "/", "--runs", "2", "--duration", "1s", "--warmup", "0s", "--concurrency", "2", "--json", "--out", out)
		if code != exitError {
			t.Errorf("%s: exit %d: %s", tc.after, code, stderr)
		}
		var rep abReport
		decodeStdout(t, tc.after, stdout, &rep)
		if len(rep.Failures) == 0 || rep.Failures[0].Side != "after" || !strings.Contains(rep.Failures[0].Reason, tc.want) {
			t.Errorf("%s: failures %+v", tc.after, rep.Failures)
		}
		if _, err := os.Stat(filepath.Join(out, "runs/http/before-2/report.json")); err != nil {
			t.Errorf("%s: the before side's runs are lost: %v", tc.after, err)
		}
	}
}
