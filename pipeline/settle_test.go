package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeTarget is a target's CPU on a fake clock: it burns busy cores until
// busyUntil, idle cores after; Sleep moves the clock.
type fakeTarget struct {
	now       time.Time
	cpu       time.Duration
	busyUntil time.Time
	busy      float64
	idle      float64
}

func (f *fakeTarget) sleep(_ context.Context, d time.Duration) error {
	for end := f.now.Add(d); f.now.Before(end); {
		step := min(10*time.Millisecond, end.Sub(f.now))
		cores := f.idle
		if f.now.Before(f.busyUntil) {
			cores = f.busy
		}
		f.cpu += time.Duration(cores * float64(step))
		f.now = f.now.Add(step)
	}
	return nil
}

func (f *fakeTarget) settler(bound time.Duration) *Settler {
	return &Settler{Bound: bound, Now: func() time.Time { return f.now }, Sleep: f.sleep,
		CPU: func() (time.Duration, error) { return f.cpu, nil }}
}

func TestSettleWaitsUntilTheTargetIsBackAtIdle(t *testing.T) {
	f := &fakeTarget{now: time.Unix(0, 0), idle: 0.02, busy: 1.8}
	s := f.settler(time.Minute)
	busyTold := 0
	s.Busy = func() { busyTold++ }
	s.Baseline(context.Background())
	f.busyUntil = f.now.Add(5 * time.Second) // the abandoned requests' work
	st := s.Wait(context.Background())
	if busyTold != 1 {
		t.Errorf("told busy %d times, want once", busyTold)
	}
	if !st.Quiet || st.JudgedBy != "cpu" {
		t.Fatalf("settle %+v: want quiet, judged by cpu", st)
	}
	if st.WaitedS < 5 || st.WaitedS > 6 {
		t.Errorf("waited %.1f s, want the 5 s of work and at most a window more", st.WaitedS)
	}
	if st.IdleCores > 0.03 || st.CoresAtStart < 1.7 || st.CoresAtEnd > s.quietCores() {
		t.Errorf("settle %+v: want idle ≈0.02, ≈1.8 at start, quiet at end", st)
	}
	if _, warned := SettleWarning(st); warned || BusyReason(st) != "" {
		t.Errorf("a quiet target is warned of: %+v", st)
	}
}

func TestSettleIsBoundedAndWarns(t *testing.T) {
	f := &fakeTarget{now: time.Unix(0, 0), idle: 0.05, busy: 1.5}
	s := f.settler(10 * time.Second)
	s.Baseline(context.Background())
	f.busyUntil = f.now.Add(time.Hour)
	st := s.Wait(context.Background())
	if st.Quiet {
		t.Fatalf("settle %+v: a target busy for an hour is not quiet", st)
	}
	if st.WaitedS < 10 || st.WaitedS > 11 {
		t.Errorf("waited %.1f s, want the bound of 10 s", st.WaitedS)
	}
	w, ok := SettleWarning(st)
	if !ok || w.Kind != "target-busy" || !strings.Contains(w.Message, "--settle") {
		t.Errorf("warning %+v: want target-busy naming --settle", w)
	}
	if !strings.Contains(BusyReason(st), "still busy") {
		t.Errorf("skip reason %q: want it to say the target was busy", BusyReason(st))
	}
}

func TestSettleQuietTargetWaitsOneWindow(t *testing.T) {
	f := &fakeTarget{now: time.Unix(0, 0), idle: 0.3}
	s := f.settler(time.Minute)
	s.Busy = func() { t.Error("a quiet target was told busy") }
	s.Baseline(context.Background())
	st := s.Wait(context.Background())
	if !st.Quiet || st.WaitedS > settleWindow.Seconds()+0.01 {
		t.Errorf("settle %+v: an idle target (busy at rest) is quiet after one window", st)
	}
}

func TestSettleDisabled(t *testing.T) {
	f := &fakeTarget{now: time.Unix(0, 0)}
	s := f.settler(0)
	s.Baseline(context.Background())
	if st := s.Wait(context.Background()); st != nil {
		t.Errorf("--settle 0 waited: %+v", st)
	}
}

func TestSettleByReply(t *testing.T) {
	now := time.Unix(0, 0)
	busyUntil := now
	reply := func(_ context.Context, timeout time.Duration) (time.Duration, error) {
		d := 50 * time.Millisecond
		if now.Before(busyUntil) {
			d = 3 * time.Second
		}
		if d > timeout {
			now = now.Add(timeout)
			return 0, errors.New("no reply within " + timeout.String())
		}
		now = now.Add(d)
		return d, nil
	}
	s := &Settler{Bound: time.Minute, Reply: reply, Now: func() time.Time { return now },
		Sleep: func(_ context.Context, d time.Duration) error { now = now.Add(d); return nil }}
	s.Baseline(context.Background())
	busyUntil = now.Add(8 * time.Second)
	st := s.Wait(context.Background())
	if !st.Quiet || st.JudgedBy != "reply" || st.WaitedS < 8 || st.IdleReplyMS != 50 {
		t.Errorf("settle %+v: want quiet by reply after the 8 s of work, 50 ms at rest", st)
	}

	busyUntil = now.Add(time.Hour)
	s.Bound = 5 * time.Second
	st = s.Wait(context.Background())
	if w, ok := SettleWarning(st); st.Quiet || !ok || w.Kind != "target-busy" || st.WaitedS < 5 {
		t.Errorf("settle %+v, warning %+v: want busy after the 5 s bound", st, w)
	}
}

func TestSettleUnjudged(t *testing.T) {
	s := &Settler{Bound: time.Minute, Unseen: "example.com is not an address of this machine",
		Reply: func(context.Context, time.Duration) (time.Duration, error) {
			return 0, errors.New("connection refused")
		},
		Now: time.Now, Sleep: sleepCtx}
	s.Baseline(context.Background())
	st := s.Wait(context.Background())
	w, ok := SettleWarning(st)
	if st.Quiet || st.JudgedBy != "none" || !ok || w.Kind != "quiet-unjudged" || !strings.Contains(w.Message, "connection refused") {
		t.Errorf("settle %+v, warning %+v: want quiet-unjudged saying why", st, w)
	}
	if BusyReason(st) != "" {
		t.Errorf("an unjudged wait blames the target's load: %q", BusyReason(st))
	}
}

// A busy target on a machine whose CPUs others take gets little CPU: its
// reading alone would call it quiet. A GET that takes longer than at rest
// says it is not; once it answers as at rest, it is.
func TestSettleOnAStarvedMachineAsksTheTarget(t *testing.T) {
	f := &fakeTarget{now: time.Unix(0, 0), idle: 0.02, busy: 0.05} // busy, but starved
	s := f.settler(time.Minute)
	var idle time.Duration
	s.Spare = func() (time.Duration, int) { return idle, 2 } // no spare CPU: idle never grows
	s.Reply = func(context.Context, time.Duration) (time.Duration, error) {
		if f.now.Before(f.busyUntil) {
			return 3 * time.Second, nil
		}
		return 20 * time.Millisecond, nil
	}
	s.Baseline(context.Background())
	f.busyUntil = f.now.Add(5 * time.Second)
	st := s.Wait(context.Background())
	if !st.Quiet || st.WaitedS < 5 || !strings.Contains(st.Note, "by a GET's time") {
		t.Fatalf("settle %+v: want a wait for the work's 5 s, ended quiet by a GET", st)
	}
	// With spare CPU the reading is the target's own: quiet at once.
	s.Spare = func() (time.Duration, int) { idle += time.Second; return idle, 2 }
	f.busyUntil = f.now.Add(5 * time.Second)
	if st := s.Wait(context.Background()); !st.Quiet || st.WaitedS > 1 {
		t.Errorf("settle %+v: want quiet after one window", st)
	}
}
