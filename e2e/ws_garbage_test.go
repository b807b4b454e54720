package e2e

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/target"

	"github.com/probehq/probe/internal/testbuild"
)

// TestWSGarbageFrames: a server that sends garbage (random binary, a
// broken marker, a message far over --read-limit, a reserved bit, a
// reserved opcode) to some connections: probe stays up, counts each
// garbage message or frame and each connection closed for it exactly,
// does not read the huge message into memory, and exits 1 with a verdict
// that says the events were missing on the connections the server broke.
func TestWSGarbageFrames(t *testing.T) {
	bin := testbuild.Program(t, "./testdata/wsbroken")
	srv := startChild(t, target.ChildSpec{Argv: []string{bin, "-fault", "garbage"}, Wait: 30 * time.Second})
	// probe in a process of its own: its RSS is read from /proc/self, and
	// in this test binary that is every earlier test's heap too (CI read
	// 274 MiB after the zoo; probe alone peaks at about 44 MiB).
	out := t.TempDir()
	cmd := exec.Command(testbuild.Program(t, "../cmd/probe"), "ws", "--json", "--out", out, "--target", srv.URL, "--token", "t0k",
		"--publish-path", "/publish", "--connections", "60", "--rooms", "3", "--events", "4", "--rounds", "2", "--pause", "100ms",
		"--deliver-timeout", "1s")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.Run()
	code, stderr := cmd.ProcessState.ExitCode(), errb.String()
	d := readWSReport(t, out)
	if d == nil {
		t.Fatalf("no report; exit %d: %s", code, stderr)
	}
	// 60 connections, arrival n mod 10 in 1…5 a fault each: 6 of each
	// kind; 3 kinds (huge, RSV2, opcode 3) close the connection, whose
	// 4 × 2 events all go missing. Random bytes without a marker are an
	// other message (a real server's pings are too), not garbage.
	const lost, garbage, other, missing = 18, 24, 6, 18 * 8
	f := d.Faults
	if code != exitError || f.Lost != lost || f.Garbage != garbage || f.Other != other || d.Totals.Missing != missing ||
		d.Totals.Expected != 480 || d.Totals.Delivered != 480-missing || d.Totals.Duplicated != 0 || d.Totals.Misrouted != 0 {
		t.Fatalf("exit %d (want %d), lost %d (want %d), garbage %d (want %d), other %d (want %d), totals %+v (want %d missing)\n%s",
			code, exitError, f.Lost, lost, f.Garbage, garbage, f.Other, other, d.Totals, missing, stderr)
	}
	for _, want := range []string{"144 missing", "18 connections closed by the server", "24 garbage"} {
		if !strings.Contains(d.Verdict, want) {
			t.Errorf("verdict %q, want %q in it", d.Verdict, want)
		}
	}
	// Six messages of 256 MiB each were announced: read whole, they
	// would be 1.5 GiB; the read limit (64 KiB) keeps probe far below.
	if d.Probe.RSSPeakBytes > 256<<20 {
		t.Errorf("probe's RSS peak %d MiB: the huge messages were read past the limit", d.Probe.RSSPeakBytes>>20)
	}
}
