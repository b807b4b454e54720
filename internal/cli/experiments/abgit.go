package experiments

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/target"
)

// gitVersions builds two refs of a repository in temporary worktrees: the
// seed's June-against-October comparison, for any Go repository.
func (c *abOptions) gitVersions(ctx context.Context, stderr io.Writer) (a, b *version, cleanup func(), err error) {
	if c.beforeRef == "" || c.afterRef == "" {
		return nil, nil, nil, shared.UsageError{Msg: "ab --git: give --before-ref and --after-ref"}
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, nil, nil, fmt.Errorf("ab --git needs git on PATH")
	}
	repo, err := filepath.Abs(c.gitDir)
	if err != nil {
		return nil, nil, nil, err
	}
	if out, err := exec.Command("git", "-C", repo, "rev-parse", "--git-dir").CombinedOutput(); err != nil {
		return nil, nil, nil, fmt.Errorf("--git %s is not a git repository: %s", c.gitDir, strings.TrimSpace(string(out)))
	}
	tmp, err := os.MkdirTemp("", "probe-ab-")
	if err != nil {
		return nil, nil, nil, err
	}
	var trees []string
	cleanup = func() {
		for _, t := range trees {
			exec.Command("git", "-C", repo, "worktree", "remove", "--force", t).Run()
		}
		os.RemoveAll(tmp)
		exec.Command("git", "-C", repo, "worktree", "prune").Run()
	}
	build := func(side, ref string) (*version, error) {
		out, err := exec.Command("git", "-C", repo, "rev-parse", "--verify", "--quiet", ref+"^{commit}").Output()
		if err != nil {
			return nil, fmt.Errorf("--%s-ref %q: no such commit, branch or tag in %s", side, ref, c.gitDir)
		}
		sha := strings.TrimSpace(string(out))
		tree := filepath.Join(tmp, side)
		if out, err := exec.Command("git", "-C", repo, "worktree", "add", "--detach", tree, sha).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("git worktree add for %s: %s", ref, strings.TrimSpace(string(out)))
		}
		trees = append(trees, tree)
		bin := filepath.Join(tmp, side+".bin")
		argv, err := shared.SplitAndFill("build", c.build, map[string]string{"{out}": bin})
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(stderr, "probe: building %s (%s) with %s\n", ref, sha[:min(12, len(sha))], strings.Join(argv, " "))
		cmd, output := target.BuildCommand(ctx, tree, argv...) // Ctrl-C kills the build's whole process group
		if err := cmd.Run(); err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("building %s: %w", ref, ctx.Err())
			}
			return nil, fmt.Errorf("building %s (%s) failed: %v\n%s", ref, sha[:min(12, len(sha))], err, tail(output.String(), 40))
		}
		runArgv, err := shared.SplitAndFill("run", c.runCmd, map[string]string{"{out}": bin})
		if err != nil {
			return nil, err
		}
		return &version{Side: side, Label: describeRef(ref, sha, c.gitDir), Start: func(ctx context.Context) (*target.Child, error) {
			return shared.StartCommand(ctx, runArgv, "", target.ChildSpec{Dir: tree, Wait: c.startTimeout})
		}}, nil
	}
	if a, err = build("before", c.beforeRef); err == nil {
		b, err = build("after", c.afterRef)
	}
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	return a, b, cleanup, nil
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… %d lines before", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
