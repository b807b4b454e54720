package probes

import (
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h1"
)

// A client of a loop that meets a refusal while the target's process
// exits tells that the target is gone, as a goroutine's does, though the
// run's cancellation (RunLoad's watch of the exit) cut its wait short:
// the refusal is the run's end, not a failed request.
func TestTargetGoneInALoop(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1")
	ch := startServeThenDie(t, 100000000)
	c := NewClient(&Target{URL: u, Child: ch}, time.Second)
	l, err := h1.NewLoop()
	if err != nil {
		t.Skip(err)
	}
	c.conn.(*h1Transport).Loop = l
	var gone bool
	l.Go(func() { gone = c.targetGone(syscall.ECONNREFUSED) })
	go func() {
		time.Sleep(25 * time.Millisecond)
		ch.Kill()     // the process exits,
		l.Interrupt() // and RunLoad cancels the run at once
	}()
	l.Run()
	if !gone {
		t.Error("the target exited during the wait: targetGone said false")
	}
}
