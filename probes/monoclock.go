package probes

import "time"

// monoClock reads the time as a start plus the monotonic time elapsed
// since it: one clock read (the monotonic clock's), where time.Now makes
// two (the wall clock's too). The load path reads the clock twice a
// request, and on a virtual machine a read is tens of nanoseconds. A
// reading's wall time is the start's plus the elapsed time, which over a
// run is the wall clock to within its slew, and readings compare and
// subtract as time.Now's do (by the monotonic clock).
type monoClock struct{ start time.Time }

func (m monoClock) now() time.Time { return m.start.Add(time.Since(m.start)) }
