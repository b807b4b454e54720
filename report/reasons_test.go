package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/probehq/probe/result"
)

// A run's error reasons from elsewhere (a shard's report.json, 500
// distinct, one with an escape sequence) are kept at MaxReasons for the
// operation, the rest counted together, the total exact; the terminal
// lists the ten most frequent, each one printable line, and says how
// many more there are.
func TestErrorReasonsAreCappedAndTheTerminalListsTen(t *testing.T) {
	run := sampleRun("page", 1000, 2000, 3000)
	run.Errors = map[string]int64{}
	var total int64
	for i := range 500 {
		run.Errors[fmt.Sprintf("GET /x: shard \x1b[2J%03d\rprobe: all checks passed", i)] = int64(i + 1)
		total += int64(i + 1)
	}
	r := FromRun(run, Analysis{})
	var sum int64
	for _, n := range r.Errors {
		sum += n
	}
	if len(r.Errors) != result.MaxReasons+1 || sum != total || r.Errors[result.OtherReasons("GET /x")] != 400*401/2 {
		t.Errorf("%d reasons, %d errors (want %d), other %d", len(r.Errors), sum, total, r.Errors[result.OtherReasons("GET /x")])
	}
	var b bytes.Buffer
	r.WriteTable(&b)
	out := b.String()
	if n := strings.Count(out, "  error ×"); n != 10 || !strings.Contains(out, "  … 91 more error reasons (") ||
		!strings.Contains(out, "error ×500: GET /x: shard [2J499 probe: all checks passed\n") {
		t.Errorf("%d error lines:\n%s", n, out)
	}
	if strings.ContainsAny(out, "\x1b\r") || strings.Contains(r.Markdown(), "\x1b") {
		t.Error("a server's escape sequence reached the terminal or report.md")
	}
}
