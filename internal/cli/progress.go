package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/probehq/probe/probes"
)

// progressLine is the live line on stderr: elapsed, requests, errors, rps.
// It is the pipeline's UI (Progress, Done).
type progressLine struct {
	w    io.Writer
	tty  bool
	name string
	last time.Time
}

func newProgressLine(w io.Writer) *progressLine {
	p := &progressLine{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// Progress shows the load's figures of the run named label.
func (p *progressLine) Progress(label string, pr probes.Progress) {
	p.name = label
	p.update(pr)
}

// Done clears the live line.
func (p *progressLine) Done() { p.clear() }

func (p *progressLine) update(pr probes.Progress) {
	phase := ""
	if pr.Warmup {
		phase = " (warm-up)"
	}
	p.show(fmt.Sprintf("%s %5.1fs%s  requests %d  errors %d  rps %.0f", p.name, pr.Elapsed.Seconds(), phase, pr.Requests, pr.Errors, pr.RPS))
}

// show replaces the live line (a terminal) or logs it now and then.
func (p *progressLine) show(line string) {
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		return
	}
	if time.Since(p.last) >= 5*time.Second { // a log, not a terminal: a line now and then
		fmt.Fprintln(p.w, line)
		p.last = time.Now()
	}
}

func (p *progressLine) clear() {
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
