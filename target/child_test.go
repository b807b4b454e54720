package target

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestStartSetsTheMemoryCapFromExec(t *testing.T) {
	c, err := Start(context.Background(), ChildSpec{
		Argv: []string{"sh", "-c", "echo listening on http://127.0.0.1:9; exec sleep 30"},
		Wait: 10 * time.Second, MemLimit: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill()
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
	c, err := Start(context.Background(), ChildSpec{
		Argv: []string{"sh", "-c", `mkdir "$TMPDIR/vault" && echo "$TMPDIR" >&2 && echo listening on http://127.0.0.1:9; exec sleep 30`},
		Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
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
