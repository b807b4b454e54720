package target

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// sleeper is a child that says it listens (where nothing does) and sleeps.
const sleeper = "echo listening on http://127.0.0.1:9; exec sleep 30"

// startShell starts sh -c script as a target's child, capped at memLimit
// bytes when not 0, waiting up to 10 s for it to say it listens; the
// child is killed when the test ends.
func startShell(t *testing.T, script string, memLimit uint64) *Child {
	t.Helper()
	c, err := Start(context.Background(), ChildSpec{Argv: []string{"sh", "-c", script}, Wait: 10 * time.Second, MemLimit: memLimit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	return c
}

func TestStartSetsTheMemoryCapFromExec(t *testing.T) {
	c := startShell(t, sleeper, 1<<30)
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", c.cmd.Process.Pid))
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	var line string
	for _, l := range strings.Split(string(limits), "\n") {
		if strings.HasPrefix(l, "Max data size") {
			line = l
		}
	}
	if f := strings.Fields(line); len(f) < 5 || f[3] != fmt.Sprint(1<<30) {
		t.Errorf("data limit line %q, want %d bytes", line, 1<<30)
	}
}

func TestMissingProgramReadsTheSameWithAndWithoutACap(t *testing.T) {
	var msgs []string
	for _, limit := range []uint64{0, 1 << 30} {
		_, err := Start(context.Background(), ChildSpec{Argv: []string{"/nonexistent/server", "-x"}, Wait: time.Second, MemLimit: limit})
		if err == nil {
			t.Fatal("started a program that does not exist")
		}
		msgs = append(msgs, err.Error())
	}
	if msgs[0] != msgs[1] || msgs[0] != "start /nonexistent/server: no such file or directory" {
		t.Errorf("without a cap %q, with one %q", msgs[0], msgs[1])
	}
}

// A child killed outright runs none of its own clean-up: the temporary
// folder probe gave it (TMPDIR) goes when it ends.
func TestAChildsTemporaryFilesGoWithIt(t *testing.T) {
	c := startShell(t, `mkdir "$TMPDIR/vault" && echo "$TMPDIR" >&2 && `+sleeper, 0)
	var tmp string
	for range 200 { // stderr is copied apart from stdout, where the URL came
		if tmp = strings.TrimSpace(strings.Split(c.Stderr.Head(), "\n")[0]); tmp != "" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(tmp, "probe-child-") {
		t.Fatalf("TMPDIR %q", tmp)
	}
	if _, err := os.Stat(tmp + "/vault"); err != nil {
		t.Fatal(err)
	}
	c.Kill()
	<-c.Exited()
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("%s after the child was killed: %v", tmp, err)
	}
}
