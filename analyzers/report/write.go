package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/HdrHistogram/hdrhistogram-go"

	"probe/probes"
)

// JSON is report.json's bytes.
func (r *Report) JSON() []byte {
	b, _ := json.MarshalIndent(r, "", "  ")
	return append(b, '\n')
}

// WriteTable prints the latency table in the manner of seed 000, then the
// errors and warnings.
func (r *Report) WriteTable(w io.Writer) {
	if r.Fuzz != nil {
		r.writeFuzzTable(w)
		return
	}
	if len(r.Runs) > 0 {
		for _, sub := range r.Runs {
			sub.WriteTable(w)
			fmt.Fprintln(w)
		}
		return
	}
	fmt.Fprintf(w, "%s against %s: %s loop, %s\n", r.Microload, r.Target, r.Mode, r.load())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tcalls\tper second\tp50\tp95\tp99\tmax\terrors\t")
	for _, op := range r.Operations {
		rps := fmt.Sprintf("%.0f", op.RPS)
		if op.Setup {
			rps = "set-up"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t\n", op.Op, op.Calls, rps, fmtMS(op.P50), fmtMS(op.P95), fmtMS(op.P99), fmtMS(op.Max), op.Errors)
	}
	tw.Flush()
	l := r.Latency
	fmt.Fprintf(w, "%d requests in %.1fs, %.0f per second, %d errors; %d connections for %d clients; %s on the wire, %s decoded\n",
		l.Requests, r.DurationS, l.RPS, l.Errors, r.Connections.Opened, r.Connections.Clients, fmtBytes(r.Bytes.Wire), fmtBytes(r.Bytes.Decoded))
	fmt.Fprintf(w, "probe: %.2f CPU s, %.1f µs a request", r.Generator.CPUSeconds, r.Generator.CPUPerRequestUS)
	if p := r.TargetProcess; p != nil {
		fmt.Fprintf(w, "; target: %.2f cores, %s RSS, %d threads, %d fds at most", p.CPUCores, fmtBytes(p.MaxRSS), p.MaxThreads, p.MaxFDs)
	}
	fmt.Fprintln(w)
	for _, reason := range probes.ByCount(r.Errors) {
		fmt.Fprintf(w, "  error ×%d: %s\n", r.Errors[reason], reason)
	}
	for i, f := range r.Findings {
		fmt.Fprintf(w, "  %d. %s [%s, %s] %.0f%% CPU, %.0f%% allocations — %s\n     %s\n     at %s\n", i+1, f.Rule, f.Class, f.Severity,
			100*f.CPUShare, 100*f.AllocShare, f.Endpoint, f.Suggestion, strings.Join(f.Frames[:min(3, len(f.Frames))], " ← "))
	}
	for _, c := range r.Crashes {
		fmt.Fprintf(w, "  crash [%s] during %s: %s\n", c.Class, c.Endpoint, strings.SplitN(c.Evidence, "\n", 2)[0])
	}
	listWarnings(w, r.Warnings)
}

func (r *Report) load() string {
	if r.Mode == "open" {
		return fmt.Sprintf("%.0f requests/s over %d connections", r.Rate, r.Concurrency)
	}
	return fmt.Sprintf("%d clients", r.Concurrency)
}

func fmtMS(v float64) string {
	switch {
	case v == 0:
		return "–"
	case v < 10:
		return fmt.Sprintf("%.2fms", v)
	case v < 1000:
		return fmt.Sprintf("%.1fms", v)
	}
	return fmt.Sprintf("%.2fs", v/1000)
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Markdown is report.md.
func (r *Report) Markdown() string {
	if r.Fuzz != nil {
		return r.fuzzMarkdown()
	}
	var b strings.Builder
	if len(r.Runs) > 0 {
		fmt.Fprintf(&b, "# probe all against %s\n\n", r.Target)
		fmt.Fprintf(&b, "| microload | requests | per second | p50 | p99 | errors |\n|---|---:|---:|---:|---:|---:|\n")
		for _, sub := range r.Runs {
			fmt.Fprintf(&b, "| %s | %d | %.0f | %s | %s | %d |\n", sub.Microload, sub.Latency.Requests, sub.Latency.RPS, fmtMS(sub.Latency.P50), fmtMS(sub.Latency.P99), sub.Latency.Errors)
		}
		for _, sub := range r.Runs {
			md := strings.ReplaceAll(sub.Markdown(), "\n## ", "\n### ")
			b.WriteString("\n" + strings.Replace(md, "# ", "## ", 1))
		}
		return b.String()
	}
	fmt.Fprintf(&b, "# %s against %s\n\n%s loop, %s, %.1f s measured.\n\n", r.Microload, r.Target, r.Mode, r.load(), r.DurationS)
	b.WriteString("| operation | calls | per second | p50 | p95 | p99 | max | errors |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, op := range r.Operations {
		rps := fmt.Sprintf("%.0f", op.RPS)
		if op.Setup {
			rps = "set-up"
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %d |\n", op.Op, op.Calls, rps, fmtMS(op.P50), fmtMS(op.P95), fmtMS(op.P99), fmtMS(op.Max), op.Errors)
	}
	fmt.Fprintf(&b, "\n%d connections for %d clients; %s on the wire, %s decoded. probe used %.2f CPU s (%.1f µs a request).\n",
		r.Connections.Opened, r.Connections.Clients, fmtBytes(r.Bytes.Wire), fmtBytes(r.Bytes.Decoded), r.Generator.CPUSeconds, r.Generator.CPUPerRequestUS)
	if p := r.TargetProcess; p != nil {
		fmt.Fprintf(&b, "The target (pid %d) used %.2f cores, at most %s RSS, %d threads and %d open files.\n", p.PID, p.CPUCores, fmtBytes(p.MaxRSS), p.MaxThreads, p.MaxFDs)
	}
	if len(r.Errors) > 0 {
		b.WriteString("\n## Errors\n\n")
		for _, reason := range probes.ByCount(r.Errors) {
			fmt.Fprintf(&b, "- %d × %s\n", r.Errors[reason], reason)
		}
	}
	if len(r.Findings) > 0 {
		b.WriteString("\n## Findings\n\n")
		for i, f := range r.Findings {
			fmt.Fprintf(&b, "%d. **%s** (%s, %s) on %s: %.0f%% of CPU (%.0f%% of the CPU serving requests), %.0f%% of allocations.  \n   %s  \n   Evidence: %s  \n   Frames: `%s`\n",
				i+1, f.Rule, f.Class, f.Severity, f.Endpoint, 100*f.CPUShare, 100*f.CPUShareOfRequests, 100*f.AllocShare, f.Suggestion, f.Evidence, strings.Join(f.Frames, "` ← `"))
		}
	}
	if len(r.Timeline) > 0 {
		b.WriteString("\n## CPU windows\n\n| window | top work |\n|---:|---|\n")
		for _, w := range r.Timeline {
			var parts []string
			for _, t := range w.Top {
				parts = append(parts, fmt.Sprintf("%s %.0f%%", t.Work, 100*t.Share))
			}
			fmt.Fprintf(&b, "| %d | %s |\n", w.Window, strings.Join(parts, ", "))
		}
	}
	if len(r.ProfileFiles) > 0 {
		fmt.Fprintf(&b, "\nProfiles (open with `go tool pprof` or any pprof viewer): %s\n", strings.Join(r.ProfileFiles, ", "))
	}
	if len(r.Crashes) > 0 {
		b.WriteString("\n## Crashes\n\n")
		for _, c := range r.Crashes {
			fmt.Fprintf(&b, "- **%s** during %s (%s)\n\n```\n%s\n```\n", c.Class, c.Endpoint, c.Input, c.Evidence)
		}
	}
	writeWarnings(&b, r.Warnings)
	if len(r.ReplyDigests) > 0 {
		b.WriteString("\n## Replies per request key\n\n| key | requests | distinct replies |\n|---|---:|---:|\n")
		for i, d := range r.ReplyDigests {
			if i == 30 {
				fmt.Fprintf(&b, "| … %d more keys | | |\n", len(r.ReplyDigests)-30)
				break
			}
			fmt.Fprintf(&b, "| `%s` | %d | %d |\n", strings.ReplaceAll(d.Key, "|", `\|`), d.Requests, d.Distinct)
		}
	}
	return b.String()
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// WriteFolder writes report.json, report.md and the latency distributions
// (HdrHistogram's percentile text format, values in milliseconds) to dir.
func (r *Report) WriteFolder(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), r.JSON(), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(r.Markdown()), 0o644); err != nil {
		return err
	}
	if r.latency != nil && r.latency.TotalCount() > 0 {
		if err := writeHgrm(filepath.Join(dir, "latency.hgrm"), r.latency); err != nil {
			return err
		}
	}
	for _, sub := range r.Runs {
		if err := sub.WriteFolder(filepath.Join(dir, sub.Microload)); err != nil {
			return err
		}
	}
	for name, raw := range r.files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			return err
		}
	}
	for name, raw := range r.profiles {
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			return err
		}
	}
	return writeOperationHistograms(dir, r.ops)
}

// writeOperationHistograms writes latency-<op>.hgrm for each operation.
func writeOperationHistograms(dir string, ops map[string]*hdrhistogram.Histogram) error {
	for name, h := range ops {
		if h.TotalCount() == 0 {
			continue
		}
		file := "latency-" + strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(name), "-"), "-") + ".hgrm"
		if err := writeHgrm(filepath.Join(dir, file), h); err != nil {
			return err
		}
	}
	return nil
}

func writeHgrm(path string, h *hdrhistogram.Histogram) error {
	var b bytes.Buffer
	if _, err := h.PercentilesPrint(&b, 5, 1000); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// writeWarnings is report.md's Warnings section.
func writeWarnings(b *strings.Builder, ws []probes.Warning) {
	if len(ws) == 0 {
		return
	}
	b.WriteString("\n## Warnings\n\n")
	for _, w := range ws {
		fmt.Fprintf(b, "- **%s**: %s\n", w.Kind, w.Message)
	}
}

// listWarnings ends the terminal table.
func listWarnings(w io.Writer, ws []probes.Warning) {
	for _, wn := range ws {
		fmt.Fprintf(w, "  warning [%s]: %s\n", wn.Kind, wn.Message)
	}
}
