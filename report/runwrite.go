package report

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/probehq/probe/result"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/textline"
)

// JSON is report.json.
func (r *Run) JSON() ([]byte, error) { return Marshal(r) }

// Page is report.md, the file the command names; report.html beside it is
// the same run drawn.
func (r *Run) Page() string { return "report.md" }

// OperationsTable is the latency table in the manner of seed 000.
func (r *Run) OperationsTable() *Table {
	t := &Table{Columns: []Column{{Title: "operation"}, {Title: "calls", Right: true}, {Title: "ok per second", Right: true},
		{Title: "p50", Right: true}, {Title: "p95", Right: true}, {Title: "p99", Right: true}, {Title: "max", Right: true},
		{Title: "errors", Right: true}}}
	for _, op := range r.Operations {
		rps := fmt.Sprintf("%.0f", op.RPS)
		if op.Setup {
			rps = "set-up"
		}
		t.AddRow(op.Op, fmt.Sprint(op.Calls), rps, FmtMS(op.P50), FmtMS(op.P95), FmtMS(op.P99), FmtMS(op.Max), fmt.Sprint(op.Errors))
	}
	return t
}

// WriteTable prints the latency table, then the errors, findings, crashes
// and warnings.
func (r *Run) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "%s against %s: %s loop, %s\n", r.Microload, r.Target, r.Mode, r.load())
	for _, l := range r.AutoClients.Lines() {
		fmt.Fprintf(w, "  %s\n", l)
	}
	r.OperationsTable().Text(w)
	l := r.Latency
	fmt.Fprintf(w, "%d requests in %.1fs, %d errors, %.0f ok a second; %d connections for %d clients; %s on the wire, %s decoded\n",
		l.Requests, r.DurationS, l.Errors, l.RPS, r.Connections.Opened, r.Connections.Clients, FmtBytes(r.Bytes.Wire), FmtBytes(r.Bytes.Decoded))
	fmt.Fprintf(w, "probe: %.2f CPU s, %.1f µs a request", r.Generator.CPUSeconds, r.Generator.CPUPerRequestUS)
	if p := r.TargetProcess; p != nil {
		fmt.Fprintf(w, "; target: %.2f cores, %s RSS, %d threads, %d fds at most", p.CPUCores, FmtBytes(p.MaxRSS), p.MaxThreads, p.MaxFDs)
	}
	fmt.Fprintln(w)
	writeReasons(w, r.Errors)
	if r.CPU != nil && len(r.Findings)+len(r.Unexplained) > 0 {
		fmt.Fprintf(w, "  %s\n", r.CPU.Line())
	}
	labels := LabelFindings(r.Findings)
	for i, f := range r.Findings {
		l := labels[i]
		in := l.Indent()
		fmt.Fprintf(w, "  %s — %s\n%s     %s\n%s     %s\n", l.TableItem(f), f.Endpoint, in, f.Suggestion, in, Where(f))
		if fl := r.fleetLine(i); fl != "" {
			fmt.Fprintf(w, "%s     fleet: %s\n", in, fl)
		}
	}
	for _, u := range r.Unexplained {
		fmt.Fprintf(w, "  unexplained: %.0f%% of the target's CPU under %s (no rule names it; --rules can)\n", 100*u.CPUShare,
			u.PathTail(4, " → "))
		if calls := u.CallsInWords(); calls != "" {
			fmt.Fprintf(w, "     calls %s\n", calls)
		}
	}
	r.writeExperimentLines(w)
	r.writeVerificationLines(w)
	for _, c := range r.Crashes {
		fmt.Fprintf(w, "  crash [%s] during %s: %s\n", c.Class, c.Endpoint, strings.SplitN(c.Evidence, "\n", 2)[0])
	}
	if r.Writes != nil {
		for _, line := range r.Writes.Says() {
			fmt.Fprintf(w, "  writes: %s\n", line)
		}
		for _, f := range r.Writes.SyncFindings {
			fmt.Fprintf(w, "  during syncs: %s [%s] %.0f%% CPU\n", f.Rule, f.Class, 100*f.CPUShare)
		}
	}
	if l := r.ProfilingOverhead.Line(); l != "" {
		fmt.Fprintf(w, "  %s\n", l)
	}
	ListWarnings(w, r.Warnings)
	ListThresholds(w, r.Thresholds)
}

func (r *Run) load() string {
	s := fmt.Sprintf("%d clients", r.Concurrency)
	if r.Mode == "open" {
		s = fmt.Sprintf("%.0f requests/s over %d connections", r.Rate, r.Concurrency)
	}
	if r.Protocol != "" {
		s += ", " + r.Protocol
	}
	if r.MCP != nil {
		s += ", MCP " + r.MCP.Lane + " lane, protocol " + r.MCP.ProtocolVersion
	}
	if r.AcceptEncoding != "" {
		s += ", Accept-Encoding: " + r.AcceptEncoding
	}
	return s
}

// Markdown is report.md.
func (r *Run) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s against %s\n\n%s loop, %s, %.1f s measured.\n\n", r.Microload, r.Target, r.Mode, r.load(), r.DurationS)
	for _, l := range r.AutoClients.Lines() {
		b.WriteString(l + "\n\n")
	}
	b.WriteString(r.OperationsTable().Markdown())
	fmt.Fprintf(&b, "\n%d connections for %d clients; %s on the wire, %s decoded. probe used %.2f CPU s (%.1f µs a request).\n",
		r.Connections.Opened, r.Connections.Clients, FmtBytes(r.Bytes.Wire), FmtBytes(r.Bytes.Decoded), r.Generator.CPUSeconds,
		r.Generator.CPUPerRequestUS)
	if p := r.TargetProcess; p != nil {
		fmt.Fprintf(&b, "The target (pid %d) used %.2f cores, at most %s RSS, %d threads and %d open files.\n", p.PID, p.CPUCores,
			FmtBytes(p.MaxRSS), p.MaxThreads, p.MaxFDs)
	}
	if rt := r.TargetRuntime; rt != nil {
		fmt.Fprintf(&b, "Its runtime: %s.\n", RuntimeLine(rt))
	}
	if c := r.LeakCheck; c != nil {
		b.WriteString(c.Line() + "\n")
	}
	if c := r.ProfilingCost; c != nil {
		b.WriteString(ProfilingCostLine(c) + "\n")
	}
	if len(r.Errors) > 0 {
		b.WriteString("\n## Errors\n\n")
		for _, reason := range result.ByCount(r.Errors) {
			fmt.Fprintf(&b, "- %d × %s\n", r.Errors[reason], textline.Of(reason, 200))
		}
	}
	if r.CPU != nil && len(r.Findings)+len(r.Unexplained) > 0 {
		b.WriteString("\n" + r.CPU.Line() + ".\n")
	}
	if len(r.Findings) > 0 {
		b.WriteString("\n## Findings\n\n")
		labels := LabelFindings(r.Findings)
		for i, f := range r.Findings {
			l := labels[i]
			in := l.Indent()
			b.WriteString(l.markdownHead(f, " on "+f.Endpoint))
			if f.OwnFrame != "" {
				fmt.Fprintf(&b, "%s   In the target's own code: `%s`  \n", in, f.OwnFrame)
			}
			if fl := r.fleetLine(i); fl != "" {
				fmt.Fprintf(&b, "%s   Fleet: %s  \n", in, fl)
			}
			fmt.Fprintf(&b, "%s   Frames: `%s`\n", in, strings.Join(f.Frames, "` ← `"))
		}
	}
	if len(r.Unexplained) > 0 {
		t := &Table{Columns: []Column{{Title: "of the target's CPU", Right: true}, {Title: "the target's own code, outermost first"},
			{Title: "its heaviest calls (of the target's CPU)"}}}
		for _, u := range r.Unexplained {
			t.AddRow(fmt.Sprintf("%.0f%%", 100*u.CPUShare), "`"+u.PathTail(4, "` → `")+"`", u.CallsInWords())
		}
		b.WriteString("\n## Unexplained\n\nOwn code that took CPU no rule explains (a rule of your own, `--rules`, can name it):\n\n" + t.Markdown())
	}
	b.WriteString(r.experimentMarkdown())
	b.WriteString(r.verificationMarkdown())
	if wr := r.Writes; wr != nil {
		b.WriteString("\n## Reads during writes\n\n")
		for _, line := range wr.Says() {
			b.WriteString("- " + line + "\n")
		}
		t := &Table{Columns: []Column{{Title: "second", Right: true}, {Title: "requests", Right: true}, {Title: "errors", Right: true},
			{Title: "p50", Right: true}, {Title: "p99", Right: true}, {Title: "sync"}}}
		for _, s := range wr.Timeline {
			mark := ""
			if s.Syncing {
				mark = "syncing"
			}
			t.AddRow(fmt.Sprint(s.Second), fmt.Sprint(s.Requests), fmt.Sprint(s.Errors), FmtMS(s.P50), FmtMS(s.P99), mark)
		}
		b.WriteString("\n" + t.Markdown())
		if len(wr.SyncFindings) > 0 {
			b.WriteString("\nThe CPU windows of the syncs alone:\n\n")
			for _, f := range wr.SyncFindings {
				fmt.Fprintf(&b, "- **%s** (%s): %.0f%% of CPU. %s\n", f.Rule, f.Class, 100*f.CPUShare, f.Evidence)
			}
		}
	}
	if len(r.Timeline) > 0 {
		t := &Table{Columns: []Column{{Title: "window", Right: true}, {Title: "top work"}}}
		for _, w := range r.Timeline {
			var parts []string
			for _, s := range w.Top {
				parts = append(parts, fmt.Sprintf("%s %.0f%%", s.Work, 100*s.Share))
			}
			t.AddRow(fmt.Sprint(w.Window), strings.Join(parts, ", "))
		}
		b.WriteString("\n## CPU windows\n\n" + t.Markdown())
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
	if l := r.ProfilingOverhead.Line(); l != "" {
		b.WriteString("\n## What profiling cost\n\n" + l + ".\n")
	}
	WriteWarnings(&b, r.Warnings)
	WriteThresholds(&b, r.Thresholds)
	if len(r.ReplyDigests) > 0 {
		t := &Table{Columns: []Column{{Title: "key"}, {Title: "requests", Right: true}, {Title: "distinct replies", Right: true}}}
		for i, d := range r.ReplyDigests {
			if i == 30 {
				t.AddRow(fmt.Sprintf("… %d more keys", len(r.ReplyDigests)-30))
				break
			}
			t.AddRow("`"+d.Key+"`", fmt.Sprint(d.Requests), fmt.Sprint(d.Distinct))
		}
		b.WriteString("\n## Replies per request key\n\n" + t.Markdown())
	}
	return b.String()
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Files are report.html, the latency distributions (HdrHistogram's
// percentile text format, values in milliseconds), the profiles and the
// flame graphs.
func (r *Run) Files() (map[string][]byte, error) {
	files := PageFiles(r.HTML(), r.files)
	if r.latency != nil && r.latency.TotalCount() > 0 {
		files["latency.hgrm"] = HGRM(r.latency)
	}
	for _, op := range r.ops {
		if op.h.TotalCount() > 0 {
			files["latency-"+strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(op.name), "-"), "-")+".hgrm"] = HGRM(op.h)
		}
	}
	return files, nil
}

func HGRM(h *hdrhistogram.Histogram) []byte {
	var b bytes.Buffer
	h.PercentilesPrint(&b, 5, 1000)
	return b.Bytes()
}

// Where shows a finding's place: the target's own frame first, then the
// library path from the work up. A finding no sample placed (a log storm
// seen only in the target's output) shows its evidence instead.
func Where(f analyzers.Finding) string {
	if f.OwnFrame == "" && len(f.Frames) == 0 {
		return "no stack: " + Ellipsis(f.Evidence, 240)
	}
	if f.OwnFrame == "" {
		return "at " + strings.Join(f.Frames[:min(3, len(f.Frames))], " ← ")
	}
	var lib []string
	for _, fr := range f.Frames {
		if fr == f.OwnFrame || fr == "…" || len(lib) == 3 {
			break
		}
		lib = append(lib, fr)
	}
	if len(lib) == 0 {
		return "in " + f.OwnFrame
	}
	return "in " + f.OwnFrame + ": " + strings.Join(lib, " ← ")
}

// shownReasons is how many error reasons the terminal lists; report.json
// and report.md have them all (at most result.MaxReasons an operation).
const shownReasons = 10

// writeReasons lists the most frequent error reasons, each one printable
// line, then how many more there are and where.
func writeReasons(w io.Writer, errs map[string]int64) {
	reasons := result.ByCount(errs)
	for i, reason := range reasons {
		if i == shownReasons {
			var n int64
			for _, k := range reasons[i:] {
				n += errs[k]
			}
			fmt.Fprintf(w, "  … %d more error reasons (%d errors): report.json\n", len(reasons)-i, n)
			break
		}
		fmt.Fprintf(w, "  error ×%d: %s\n", errs[reason], textline.Of(reason, 200))
	}
}

// RuntimeLine says a target's Go runtime in one line: its Go, its
// experiments, GOMAXPROCS (with the CPUs it may use), GOGC, GOMEMLIMIT
// and GODEBUG.
//
// A runtime not read from the target's binary says where its figures
// came from, "unknown" for each one no source gave, and what would settle
// them (rt.Unknown).
func RuntimeLine(rt *result.Runtime) string {
	or := func(v string, max int) string {
		if v == "" {
			return "unknown"
		}
		return textline.Of(v, max)
	}
	s := textline.Of(rt.GoVersion, 40)
	if rt.GoVersion == "" {
		s = "Go version unknown"
	}
	if rt.GOEXPERIMENT != "" {
		s += " (GOEXPERIMENT " + textline.Of(rt.GOEXPERIMENT, 80) + ")"
	}
	if rt.From != "" && rt.From != "binary" {
		s += " (from " + textline.Of(rt.From, 40) + ")"
	}
	s += ", GOMAXPROCS " + or(rt.GOMAXPROCS, 20)
	if rt.CPUs > 0 {
		s += fmt.Sprintf(" (%d CPUs in its affinity)", rt.CPUs)
	}
	s += ", GOGC " + or(rt.GOGC, 20) + ", GOMEMLIMIT " + or(rt.GOMEMLIMIT, 20)
	if rt.GODEBUG != "" {
		s += ", GODEBUG " + textline.Of(rt.GODEBUG, 80)
	}
	if rt.Unknown != "" {
		s += ". Unknown: " + textline.Of(rt.Unknown, 600)
	}
	return s
}

// ProfilingCostLine says what profiling cost the target in the run: its
// CPU per request profiled against unprofiled, with the spread.
func ProfilingCostLine(c *result.ProfilingCost) string {
	on, off := 0, 0
	for _, l := range c.Legs {
		if l.Profiled {
			on++
		} else {
			off++
		}
	}
	return fmt.Sprintf("Profiling cost the target %+.1f%% CPU a request [%+.1f%%, %+.1f%%] (%d unprofiled gaps against the "+
		"CPU windows beside them, the first of %d windows left out; negative: within the noise).", 100*c.Overhead, 100*c.Interval[0],
		100*c.Interval[1], off, on)
}
