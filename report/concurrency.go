package report

import (
	"fmt"
	"strings"
)

// Concurrency is how --concurrency auto chose the run's clients: the
// steps of its short ramp, and why it stopped where it did.
type Concurrency struct {
	Chosen int               `json:"chosen"`
	Forced string            `json:"forced,omitempty"` // why auto was used without the flag (probe all: a slow endpoint)
	Steps  []ConcurrencyStep `json:"steps"`
	Why    string            `json:"why"`
}

// ConcurrencyStep is one window of the ramp.
type ConcurrencyStep struct {
	Clients  int     `json:"clients"`
	RPS      float64 `json:"rps"`
	P50ms    float64 `json:"p50_ms"`
	Timeouts int64   `json:"timeouts"`
}

// Lines are the choice in words for the text report (one or two lines):
// the chosen clients and why, then the ramp.
func (c *Concurrency) Lines() []string {
	if c == nil {
		return nil
	}
	word := "clients"
	if c.Chosen == 1 {
		word = "client"
	}
	head := fmt.Sprintf("concurrency: auto chose %d %s: %s", c.Chosen, word, c.Why)
	if c.Forced != "" {
		head += " (auto because " + c.Forced + ")"
	}
	steps := make([]string, len(c.Steps))
	for i, s := range c.Steps {
		steps[i] = fmt.Sprintf("%d→%.4g rps p50 %.4g ms", s.Clients, s.RPS, s.P50ms)
		if s.Timeouts > 0 {
			steps[i] += fmt.Sprintf(" %d timeouts", s.Timeouts)
		}
	}
	return []string{head, "concurrency ramp: " + strings.Join(steps, ", ")}
}
