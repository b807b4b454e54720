package shared

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
	Name string
	last time.Time
}

func NewProgressLine(w io.Writer) *progressLine {
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
	p.Name = label
	p.Update(pr)
}

// Done clears the live line.
func (p *progressLine) Done() { p.Clear() }

func (p *progressLine) Update(pr probes.Progress) {
	phase := ""
	if pr.Warmup {
		phase = " (warm-up)"
	}
	p.Show(fmt.Sprintf("%s %5.1fs%s  requests %d  errors %d  rps %.0f", p.Name, pr.Elapsed.Seconds(), phase, pr.Requests, pr.Errors, pr.RPS))
}

// show replaces the live line (a terminal) or logs it now and then.
func (p *progressLine) Show(line string) {
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		return
	}
	if time.Since(p.last) >= 5*time.Second { // a log, not a terminal: a line now and then
		fmt.Fprintln(p.w, line)
		p.last = time.Now()
	}
}

func (p *progressLine) Clear() {
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
