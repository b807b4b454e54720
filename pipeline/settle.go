package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

// A slow server keeps working on the requests a run abandoned (issue 25:
// a sitemap of 3 CPU-seconds a request kept a blog busy for a minute after
// probe all's sitemap run, and the next microload's discovery timed out).
// A Settler measures the target's idle level once, before the first
// microload, and before each later one waits, bounded, until the target
// is back near it.

const (
	idleSample   = time.Second            // the idle level's CPU sample
	settleWindow = 500 * time.Millisecond // each sample while waiting
	// A target is quiet at its idle CPU plus a tenth of a core, or plus
	// half of it when it is busier than that at rest.
	quietCoresAbove = 0.1
	// By reply: quiet when GET answers within twice its idle time, or its
	// idle time plus a quarter second.
	quietReplyAbove = 250 * time.Millisecond
)

// Settler waits for a quiet target. Its readings are fields so that tests
// give a fake CPU and clock.
type Settler struct {
	Bound time.Duration // the longest wait; 0 disables the wait
	// CPU reads the CPU the target's process has used so far; nil when
	// the process is not seen: Reply judges then.
	CPU func() (time.Duration, error)
	// Reply times a cheap request of the target; nil too: quiet cannot be
	// judged. By CPU, it settles a reading the machine may have bent.
	Reply func(ctx context.Context, timeout time.Duration) (time.Duration, error)
	// Spare reads the machine's CPU so far that no process used and its
	// CPUs; nil: not seen. A busy target on a machine with no spare CPU
	// gets little of it, and its CPU alone would call it quiet.
	Spare func() (time.Duration, int)
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Unseen says why the target's process is not seen (for the note).
	Unseen string
	// Busy, when set, is told once a wait finds the target busy: the
	// command says why nothing happens.
	Busy func()

	judged    string // cpu, reply or none, from Baseline
	idleCores float64
	idleReply time.Duration
	note      string
}

// NewSettler judges t by its process's CPU when probe can see it, else by
// the time a GET of its URL takes.
func NewSettler(t *probes.Target, bound time.Duration) *Settler {
	s := &Settler{Bound: bound, Now: time.Now, Sleep: sleepCtx}
	header := append([]h1.Field{{Name: "User-Agent", Value: probes.UserAgent}}, t.Header...)
	s.Reply = func(ctx context.Context, timeout time.Duration) (time.Duration, error) {
		return target.ReplyTime(ctx, t.URL, header, timeout)
	}
	// No profiles asked for: Open sends no request, and needs no context.
	if server := target.Open(context.Background(), target.Spec{URL: t.URL, Child: t.Child}); server.PID > 0 {
		pid := server.PID
		s.CPU = func() (time.Duration, error) { return target.ProcessCPU(pid) }
		s.Spare = target.MachineIdle
	} else {
		s.Unseen = server.Unseen
	}
	return s
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Baseline measures the target's idle level: once, before the first
// microload.
func (s *Settler) Baseline(ctx context.Context) {
	if s.Bound <= 0 {
		return
	}
	switch {
	case s.CPU != nil:
		cores, _, err := s.cores(ctx, idleSample)
		if err == nil {
			s.judged, s.idleCores = "cpu", cores
			if s.Reply != nil {
				if d, err := s.Reply(ctx, min(s.Bound, 10*time.Second)); err == nil {
					s.idleReply = d
				}
			}
			return
		}
		s.judged, s.note = "none", "the target's CPU could not be read: "+err.Error()
	case s.Reply != nil:
		d, err := s.Reply(ctx, s.Bound)
		if err == nil {
			s.judged, s.idleReply = "reply", d
			return
		}
		s.judged, s.note = "none", "GET of the target before the first microload failed: "+err.Error()
	default:
		s.judged, s.note = "none", "neither the target's CPU nor a reply can be read"
	}
	if s.Unseen != "" {
		s.note += " (its process is not seen: " + s.Unseen + ")"
	}
}

// cores is the target's CPU, in cores, over a window, and the machine's
// spare cores then (-1: not seen).
func (s *Settler) cores(ctx context.Context, window time.Duration) (float64, float64, error) {
	c0, err := s.CPU()
	if err != nil {
		return 0, 0, err
	}
	var idle0 time.Duration
	if s.Spare != nil {
		idle0, _ = s.Spare()
	}
	t0 := s.Now()
	if err := s.Sleep(ctx, window); err != nil {
		return 0, 0, err
	}
	c1, err := s.CPU()
	if err != nil {
		return 0, 0, err
	}
	elapsed := s.Now().Sub(t0)
	if elapsed <= 0 {
		return 0, 0, fmt.Errorf("no time passed")
	}
	spare := -1.0
	if s.Spare != nil {
		idle1, cpus := s.Spare()
		if cpus > 0 && idle1 >= idle0 {
			spare = (idle1 - idle0).Seconds() / elapsed.Seconds()
		}
	}
	return (c1 - c0).Seconds() / elapsed.Seconds(), spare, nil
}

// starvedQuiet says whether a target quiet by its CPU on a machine with no
// spare CPU answers as at rest: its CPU may be low because others took the
// cores. No reply at rest to compare with: it cannot tell, and trusts the
// CPU.
func (s *Settler) starvedQuiet(ctx context.Context, st *report.Settle) bool {
	if s.Reply == nil || s.idleReply <= 0 {
		return true
	}
	d, err := s.Reply(ctx, 4*s.quietReply())
	st.IdleReplyMS, st.ReplyMS = ms(s.idleReply), ms(d)
	if err == nil && d <= s.quietReply() {
		st.Note = "the machine had no spare CPU: quiet by the target's CPU and by a GET's time"
		return true
	}
	st.Note = "the machine had no spare CPU and a GET took longer than at rest: the target's low CPU was not quiet"
	return false
}

func (s *Settler) quietCores() float64 {
	return s.idleCores + max(quietCoresAbove, s.idleCores/2)
}

func (s *Settler) quietReply() time.Duration {
	return max(2*s.idleReply, s.idleReply+quietReplyAbove)
}

// Wait waits until the target is quiet or Bound has passed: nil when the
// wait is disabled. Baseline comes first.
func (s *Settler) Wait(ctx context.Context) *report.Settle {
	if s.Bound <= 0 {
		return nil
	}
	st := &report.Settle{JudgedBy: s.judged, Note: s.note}
	start := s.Now()
	defer func() { st.WaitedS = s.Now().Sub(start).Seconds() }()
	switch s.judged {
	case "cpu":
		st.IdleCores = s.idleCores
		for first := true; ; first = false {
			cores, spare, err := s.cores(ctx, settleWindow)
			if err != nil {
				if ctx.Err() == nil {
					st.Note = "the target's CPU could not be read: " + err.Error()
				}
				return st
			}
			if first {
				st.CoresAtStart = cores
			}
			st.CoresAtEnd = cores
			if cores <= s.quietCores() && (spare < 0 || spare >= quietCoresAbove || s.starvedQuiet(ctx, st)) {
				st.Quiet = true
				return st
			}
			if first && s.Busy != nil {
				s.Busy()
			}
			if s.Now().Sub(start) >= s.Bound {
				return st
			}
		}
	case "reply":
		st.IdleReplyMS = ms(s.idleReply)
		for told := false; ; told = true {
			left := s.Bound - s.Now().Sub(start)
			d, err := s.Reply(ctx, max(min(left, 4*s.quietReply()), settleWindow))
			st.ReplyMS = ms(d)
			if err == nil && d <= s.quietReply() {
				st.Quiet = true
				return st
			}
			if ctx.Err() != nil || s.Now().Sub(start) >= s.Bound {
				if err != nil {
					st.Note = "the last GET: " + err.Error()
				}
				return st
			}
			if s.Busy != nil && !told {
				s.Busy()
			}
			if s.Sleep(ctx, settleWindow) != nil {
				return st
			}
		}
	}
	return st
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// SettleWarning is the report's warning of a wait that did not end quiet:
// target-busy when the target was seen busy, quiet-unjudged when nothing
// could tell.
func SettleWarning(st *report.Settle) (result.Warning, bool) {
	return SettleWarningBefore(st, "this microload")
}

// SettleWarningBefore is SettleWarning for a wait before what: a
// microload, a ramp's step, a microload at one size of a scale.
func SettleWarningBefore(st *report.Settle, what string) (result.Warning, bool) {
	if st == nil || st.Quiet {
		return result.Warning{}, false
	}
	advice := "the server was likely still finishing requests an earlier run left: " +
		"these figures are lower than the server's own, and a failed discovery may be its load, not the site; " +
		"raise --settle, or run " + what + " alone"
	switch st.JudgedBy {
	case "cpu":
		return result.Warning{Kind: "target-busy", Message: fmt.Sprintf(
			"the target was still busy when %s began: %.2f cores after waiting %.0f s (%.2f when the wait began, %.2f at rest); %s",
			what, st.CoresAtEnd, st.WaitedS, st.CoresAtStart, st.IdleCores, advice)}, true
	case "reply":
		seen := fmt.Sprintf("GET of the target took %.0f ms", st.ReplyMS)
		if st.ReplyMS == 0 {
			seen = "GET of the target got no reply"
			if st.Note != "" {
				seen += " (" + st.Note + ")"
			}
		}
		return result.Warning{Kind: "target-busy", Message: fmt.Sprintf(
			"the target was still slow when %s began: %s after waiting %.0f s (%.0f ms at rest); %s",
			what, seen, st.WaitedS, st.IdleReplyMS, advice)}, true
	}
	return result.Warning{Kind: "quiet-unjudged",
		Message: "whether the target was quiet before " + what + " could not be judged: " + st.Note}, true
}

// BusyReason is what a skip reason adds when the target was not quiet: the
// failure may be the server's load, not the site.
func BusyReason(st *report.Settle) string {
	if st == nil || st.Quiet || st.JudgedBy == "none" {
		return ""
	}
	if st.JudgedBy == "cpu" {
		return fmt.Sprintf("the target was still busy (%.2f cores, %.2f at rest, after waiting %.0f s): "+
			"the server may have been finishing earlier requests; raise --settle, or run this microload alone",
			st.CoresAtEnd, st.IdleCores, st.WaitedS)
	}
	return fmt.Sprintf("the target was still slow (GET %.0f ms, %.0f ms at rest, after waiting %.0f s): "+
		"the server may have been finishing earlier requests; raise --settle, or run this microload alone",
		st.ReplyMS, st.IdleReplyMS, st.WaitedS)
}
