package pipeline

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/crash"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// busyCores is the CPU a target must use over the window to count as
// working: an idle Go server uses a few thousandths of a core.
const busyCores = 0.1

// stall is one operation whose requests outlived the timeout.
type stall struct {
	op       string
	timeouts int64
	answered int64                   // its calls that passed their checks
	replies  *hdrhistogram.Histogram // service times of the calls that got a reply; nil: not known
}

// stalls are the run's operations with requests that outlived the
// timeout. A run whose operations do not count their timeouts (made
// elsewhere than probes.RunLoad) is one stall of all its operations, its
// errors all counted against its replies.
func stalls(run *result.Run) []stall {
	var out []stall
	counted := false // the operations count their timeouts
	for _, op := range run.Ops {
		counted = counted || op.Timeouts != nil
		if !op.Setup && op.Timeouts != nil && op.Timeouts.TotalCount() > 0 {
			out = append(out, stall{op: op.Name, timeouts: op.Timeouts.TotalCount(), answered: op.Calls - op.Errors,
				replies: without(op.Service, op.Timeouts)})
		}
	}
	if n := run.Errors["timeout"]; !counted && n > 0 {
		calls, _ := run.Requests()
		var errs int64
		for _, k := range run.Errors {
			errs += k
		}
		out = append(out, stall{op: endpoints(run), timeouts: n, answered: max(0, calls-errs)})
	}
	return out
}

// without is h less the values of sub (recorded in a histogram of the
// same range and precision): the same buckets, subtracted.
func without(h, sub *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	s, d := h.Export(), sub.Export()
	if len(s.Counts) != len(d.Counts) {
		return nil
	}
	for i := range s.Counts {
		s.Counts[i] = max(0, s.Counts[i]-d.Counts[i])
	}
	return hdrhistogram.Import(s)
}

// targetCores is the target's CPU over the window, when it was seen.
func targetCores(run *result.Run) (float64, bool) {
	span := run.CPUSpan()
	if run.TargetProc == nil || span <= 0 {
		return 0, false
	}
	return run.TargetProc.CPU.Seconds() / span.Seconds(), true
}

// slowOrStuck tells the stalls apart. An operation is slow when some of
// its requests were answered, or when the target was busy on the CPU:
// it makes progress, too little for the timeout at this load. It is
// stuck (a hang) when none was answered and the target used no CPU, or
// when none was answered and its CPU is not known.
func slowOrStuck(run *result.Run) (slow []result.Warning, hang []report.Crash) {
	cores, seen := targetCores(run)
	busy := seen && cores >= busyCores
	var stuck []stall
	for _, s := range stalls(run) {
		if s.answered > 0 || busy {
			slow = append(slow, result.Warning{Kind: "slow-endpoint", Message: slowMessage(run, s, cores, seen)})
		} else {
			stuck = append(stuck, s)
		}
	}
	if len(stuck) == 0 {
		return slow, nil
	}
	var n int64
	var ops []string
	for _, s := range stuck {
		n += s.timeouts
		ops = append(ops, s.op)
	}
	evidence := fmt.Sprintf("%d requests got no reply within the timeout while the target's process lived, and none was answered", n)
	if seen {
		evidence += fmt.Sprintf("; the target used %.2f cores: stuck, not slow", cores)
	} else {
		evidence += " (its CPU is not seen)"
	}
	c := crash.ClassifyHang(evidence)
	return slow, []report.Crash{{Class: c.Class, Input: "the " + run.Microload + " load", Endpoint: strings.Join(ops, ", "),
		Evidence: c.Evidence}}
}

// slowMessage says what was seen of a slow operation and the load that
// would measure it. By Little's law, N clients of a target that serves
// rate requests a second wait N / rate for each reply on average; a
// request is given half the timeout at least (lib/h1 re-arms its deadline
// only when half has passed), so N = rate × timeout / 4 keeps the mean
// wait at half of that, room for the slower replies.
func slowMessage(run *result.Run, s stall, cores float64, seen bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s is slow, not stuck: %d of its requests got no reply within the %s timeout", s.op, s.timeouts, fmtDuration(run.Timeout))
	if s.answered > 0 {
		fmt.Fprintf(&b, " while %d were answered", s.answered)
		if s.replies != nil && s.replies.TotalCount() > 0 {
			fmt.Fprintf(&b, " (p50 %s, max %s)", fmtDuration(time.Duration(s.replies.ValueAtQuantile(50))*time.Microsecond),
				fmtDuration(time.Duration(s.replies.Max())*time.Microsecond))
		}
	} else {
		b.WriteString(" and none was answered")
	}
	if seen {
		fmt.Fprintf(&b, ", and the target used %.2f cores", cores)
	}
	rate := 0.0
	if run.Duration > 0 {
		rate = float64(s.answered) / run.Duration.Seconds()
	}
	if run.Timeout <= 0 {
		b.WriteString(": fewer --concurrency clients, or a longer --timeout, would measure it")
		return b.String()
	}
	quarter := run.Timeout / 4
	n := max(1, int(math.Floor(rate*quarter.Seconds())))
	if s.answered == 0 {
		b.WriteString(": it is working, not stuck, and answers nothing within the timeout at this load; --concurrency 1, or a " +
			"longer --timeout, would measure it")
		return b.String()
	}
	if run.Mode == "open" {
		fmt.Fprintf(&b, ": it served %.3g a second; a --rate under that, or a longer --timeout, would measure it", rate)
		return b.String()
	}
	if n >= run.Concurrency {
		// The queue is short: the clients are not what makes them late.
		wait := time.Duration(float64(run.Concurrency) / rate * float64(time.Second))
		fmt.Fprintf(&b, ": it served %.3g a second at %d clients, a mean wait of %s (Little's law), well within the timeout; "+
			"the load is not the cause, some requests are slow in themselves: a longer --timeout would measure them", rate, run.Concurrency,
			fmtDuration(wait))
		return b.String()
	}
	fmt.Fprintf(&b, ": it served %.3g a second at %d clients; --concurrency %d, or a longer --timeout, would measure it "+
		"(Little's law: %.3g/s × %s keeps the mean wait at a quarter of the timeout)", rate, run.Concurrency, n, rate, fmtDuration(quarter))
	return b.String()
}

// fmtDuration is a duration as a reader says it: 1.5s, 30s, 250ms.
func fmtDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3gs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3gms", float64(d)/float64(time.Millisecond))
	}
	return d.String()
}

// profilePartial warns when the CPU profile holds under half of the CPU
// the target's process used, with how much of the run it covered and the
// reasons it may be short that the run shows.
func profilePartial(run *result.Run) (result.Warning, bool) {
	prof, tp := run.Profiles, run.TargetProc
	if prof == nil || prof.CPU == nil || tp == nil || tp.CPU <= 0 {
		return result.Warning{}, false
	}
	profiled := analyzers.CPUTime(prof.CPU)
	covered, span := time.Duration(prof.CPU.DurationNanos), run.CPUSpan()
	expected := tp.CPU
	if prof.Cost != nil && covered > 0 && covered < span {
		// The unprofiled gaps that measured profiling_cost: the profile is
		// short of the run by them, not by anything the target hid.
		expected = time.Duration(float64(expected) * covered.Seconds() / span.Seconds())
	}
	if profiled >= expected/2 {
		return result.Warning{}, false
	}
	var why []string
	if err := prof.CPUWindowError; err != nil {
		switch {
		case prof.Unanswered:
			why = append(why, fmt.Sprintf("the target stopped answering /debug/pprof (%v): see its errors and crashes", err))
		case target.IsTimeout(err):
			why = append(why, fmt.Sprintf("a profile request timed out (%v): a target this busy answers /debug/pprof late; fewer "+
				"--concurrency clients leave it the CPU to answer", err))
		default:
			why = append(why, fmt.Sprintf("a profile request failed (%v), and the windows after it were not taken", err))
		}
	}
	if tail := span - run.Duration; run.Duration > 0 && tail > span/10 {
		why = append(why, fmt.Sprintf("its last requests ran %s past --duration, unprofiled (the requests in flight when it "+
			"ended; slow ones run up to --timeout)", fmtDuration(tail)))
	}
	if tp.Children > 0 {
		why = append(why, fmt.Sprintf("%.1fs of its CPU ran in its child processes, which /debug/pprof does not see", tp.Children.Seconds()))
	}
	if len(why) == 0 {
		why = append(why, "no profile request failed and the target has no child processes: the rest ran where Go's CPU profiler "+
			"does not sample (cgo, threads the Go runtime did not start)")
	}
	return result.Warning{Kind: "profile-partial", Message: fmt.Sprintf(
		"the CPU profile covers %s of the %s the run's CPU figures cover, and %.1fs of the %.1fs of CPU the target used: %s",
		fmtDuration(covered), fmtDuration(span), profiled.Seconds(), tp.CPU.Seconds(), strings.Join(why, "; "))}, true
}
