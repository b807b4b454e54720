package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/probehq/probe/internal/testrepo"
)

func TestABBadInput(t *testing.T) {
	repo := testrepo.GitServer(t)
	victim := buildVictim(t, "fuzz/testdata/victim")
	notDir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"ab"}, exitUsage, "give --before CMD --after CMD"},
		{[]string{"ab", "--before", victim, "http", "--path", "/"}, exitUsage, "--before and --after go together"},
		{[]string{"ab", "--fixture", "sitmap"}, exitUsage, `unknown microload "sitmap"`},
		{[]string{"ab", "--before", victim, "--after", victim}, exitUsage, "name the microloads"},
		{[]string{"ab", "--git", repo, "--before-ref", "v1", "--after-ref", "v9", "http", "--path", "/work"}, exitError,
			`--after-ref "v9": no such commit`},
		{[]string{"ab", "--git", notDir, "--before-ref", "v1", "--after-ref", "v2", "http", "--path", "/work"}, exitError,
			"is not a git repository"},
		{[]string{"compare", notDir}, exitUsage, "usage: probe compare"},
		{[]string{"compare", notDir, notDir}, exitError, "is not a probe report folder"},
	} {
		probeCmd.BadInput(t, tc.args, tc.code, tc.want)
	}

	// A build that fails shows its output.
	code, _, stderr := probeCmd.Run(t, context.Background(), "ab", "--git", repo, "--before-ref", "v1", "--after-ref", "v3",
		"--build", "go build -o {out} .", "http", "--path", "/work", "--out", t.TempDir())
	if code != exitError || !strings.Contains(stderr, "building v3") || !strings.Contains(stderr, "undefined: undefined_name") {
		t.Errorf("failing build: exit %d, stderr %q", code, stderr)
	}
}

// TestABVersionThatFails: one side that will not start, one that dies mid
