// Package fuzzreport is probe fuzz's report: the crashes, their reproducers
// and the crasher files.
package fuzzreport

import (
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"

	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"

	"github.com/probehq/probe/analyzers"
)

// FuzzReport is report.json of a fuzz run: its crashes in DESIGN.md's
// schema and what the search did.
type FuzzReport struct {
	report.Summary              // microload "fuzz notequery" or "fuzz http", mode "fuzz", no findings
	Concurrency    int          `json:"concurrency,omitempty"`
	Ended          string       `json:"ended,omitempty"`
	Fuzz           *FuzzSummary `json:"fuzz"`

	files map[string][]byte // crashers/
}

// FuzzSummary is what a fuzz run did besides its crashes.
type FuzzSummary struct {
	Templates     []string         `json:"templates"`
	Inputs        int64            `json:"inputs"`
	Statuses      map[string]int64 `json:"statuses"`          // replies by HTTP status
	ErrorReplies  map[string]int64 `json:"error_replies"`     // error replies and transport errors by reason, numbers elided
	Rejected      int64            `json:"rejected"`          // inputs answered with a 4xx while the target lived
	Refused       int64            `json:"refused,omitempty"` // inputs a whole 2xx reply refused (JSON-RPC error, MCP isError)
	Extremes      int              `json:"extremes"`          // extreme inputs tried before the random ones
	Unsent        int64            `json:"unsent,omitempty"`  // drawn inputs the wire cannot carry, skipped
	Restarts      int              `json:"restarts"`
	SearchS       float64          `json:"search_s"`
	ShrinkS       float64          `json:"shrink_s"`
	Concurrency   int              `json:"concurrency"`
	MemLimitBytes uint64           `json:"mem_limit_bytes,omitempty"`
	Server        string           `json:"server"` // how to start the target for the reproductions
}

// FuzzSetting is what the report says about how the run was made.
type FuzzSetting struct {
	Name        string // "fuzz notequery", "fuzz http"
	Concurrency int
	MemLimit    uint64
	Server      string // a command that starts the target on ReproBase's address
	ReproBase   string // the URL the reproductions send to, e.g. http://127.0.0.1:8080
	Header      map[string]string
	// ReproPrelude, when set, is shell run before each reproduction (an
	// MCP session opened, its id in $SID); ReproArgs are curl words added
	// to it, as they are (-H "Mcp-Session-Id: $SID").
	ReproPrelude string
	ReproArgs    []string
}

// maxInputText bounds an input quoted in report.json and report.md; the
// whole input is in crashers/.
const maxInputText = 2000

// FromFuzz builds the report of a fuzz run and the crasher files that go
// with it.
func FromFuzz(res *result.Fuzz, s FuzzSetting) *FuzzReport {
	r := &FuzzReport{Summary: report.Summary{Microload: s.Name, Target: res.Target, Mode: "fuzz", DurationS: res.Search.Seconds(),
		Findings: []analyzers.Finding{}, Crashes: []report.Crash{}, Warnings: []result.Warning{}},
		Ended: res.Ended, Concurrency: s.Concurrency, files: map[string][]byte{}}
	var errs int64
	for code, n := range res.Statuses {
		if code >= 400 {
			errs += n
		}
	}
	for reason, n := range res.Failures {
		if strings.HasPrefix(reason, "no reply") {
			errs += n
		}
	}
	r.Latency = report.Latency{Requests: res.Inputs, Errors: errs}
	if res.Search > 0 {
		r.Latency.RPS = float64(res.Inputs) / res.Search.Seconds()
	}
	r.Fuzz = &FuzzSummary{Templates: []string{}, Inputs: res.Inputs, Statuses: map[string]int64{}, ErrorReplies: map[string]int64{},
		Rejected: res.Hostile, Refused: res.Refused, Extremes: res.Extremes, Unsent: res.Unsent, Restarts: res.Restarts,
		SearchS: res.Search.Seconds(), ShrinkS: res.Shrinking.Seconds(),
		Concurrency: s.Concurrency, MemLimitBytes: s.MemLimit, Server: s.Server}
	for _, t := range res.Templates {
		r.Fuzz.Templates = append(r.Fuzz.Templates, t.String())
	}
	for code, n := range res.Statuses {
		r.Fuzz.Statuses[fmt.Sprint(code)] = n
	}
	for _, reason := range topReasons(res.Failures, 20) {
		r.Fuzz.ErrorReplies[reason] = res.Failures[reason]
	}
	for i, c := range res.Crashes {
		base := fmt.Sprintf("crashers/%d-%s", i+1, c.Class)
		rc := report.Crash{Class: c.Class, Input: requestText(c.Request()), Endpoint: c.Endpoint, Evidence: c.Evidence,
			Frames: c.Frames, Repro: reproLine(s, c, base), File: base + ".txt", Shrink: c.Shrink,
			FoundAfterS: c.FoundAfter.Seconds(), Seen: c.Seen, Confirmed: c.Confirmed, Concurrent: c.Concurrent, Hole: c.Hole}
		for _, a := range c.Also {
			rc.Also = append(rc.Also, requestText(res.Render(a)))
		}
		if found := requestText(res.Render(c.Original)); found != rc.Input {
			rc.Original = found
		}
		if len(c.Body) > 0 {
			r.files[base+".body"] = c.Body
		}
		r.files[base+".txt"] = []byte(crasherText(rc, s, c))
		r.Crashes = append(r.Crashes, rc)
	}
	if res.Ended != "" {
		r.Warnings = result.AddWarning(r.Warnings, "ended-early", res.Ended)
	}
	if res.LeakHunt != "" {
		r.Warnings = result.AddWarning(r.Warnings, "leak-hunt", res.LeakHunt)
	}
	return r
}

// JSON is report.json.
func (r *FuzzReport) JSON() ([]byte, error) { return report.Marshal(r) }

// Page is report.md.
func (r *FuzzReport) Page() string { return "report.md" }

// Files are the crashers: a text per crash, and its body where it has one.
func (r *FuzzReport) Files() (map[string][]byte, error) { return r.files, nil }

// requestText is a request on one line: method, target, the template's
// headers in brackets, the body.
func requestText(r result.FuzzRequest) string {
	s := r.Method + " " + r.Path
	for _, h := range r.Header {
		s += fmt.Sprintf(" [%s: %s]", h.Name, h.Value)
	}
	if len(r.Body) > 0 {
		s += " " + string(r.Body)
	}
	if len(s) > maxInputText {
		s = fmt.Sprintf("%s… (%d bytes in all)", s[:maxInputText], len(s))
	}
	return s
}

// reproLine is one shell line that sends the crashing input to a target
// started with s.Server; copies in parallel when it needs concurrency.
// It sends what probe sent: the method as given (-X; HEAD as --head,
// which does not wait for a body), the target as is (--path-as-is: curl
// would squash /../; -g: nor read [ ] { } as globs), each header with -H
// (an empty value as "Name;", curl's way to send one), the body byte for
// byte from its file, and no Content-Type curl would add to it when probe
// sent none.
func reproLine(s FuzzSetting, c *result.FuzzCrash, base string) string {
	u := strings.TrimRight(s.ReproBase, "/") + c.Path
	var b strings.Builder
	b.WriteString("curl -sS -o /dev/null -w '%{http_code}\\n'")
	switch {
	case c.Method == "HEAD" && len(c.Body) == 0:
		b.WriteString(" --head")
	case c.Method != "GET" || len(c.Body) > 0:
		fmt.Fprintf(&b, " -X %s", report.ShellQuote(c.Method))
	}
	if strings.ContainsAny(c.Path, "[]{}") {
		b.WriteString(" -g")
	}
	if strings.Contains(c.Path, "/.") {
		b.WriteString(" --path-as-is")
	}
	keys := make([]string, 0, len(s.Header))
	for k := range s.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fields := make([]result.FuzzField, 0, len(keys)+len(c.Header))
	for _, k := range keys {
		fields = append(fields, result.FuzzField{Name: k, Value: s.Header[k]})
	}
	fields = append(fields, c.Header...)
	contentType := false
	for _, f := range fields {
		contentType = contentType || strings.EqualFold(f.Name, "Content-Type")
		if f.Value == "" {
			fmt.Fprintf(&b, " -H %s", report.ShellQuote(f.Name+";"))
		} else {
			fmt.Fprintf(&b, " -H %s", report.ShellQuote(f.Name+": "+f.Value))
		}
	}
	if len(c.Body) > 0 {
		if !contentType {
			b.WriteString(" -H 'Content-Type:'")
		}
		fmt.Fprintf(&b, " --data-binary @%s.body", base)
	}
	for _, a := range s.ReproArgs {
		b.WriteString(" " + a)
	}
	fmt.Fprintf(&b, " %s", report.ShellQuote(u))
	line := b.String()
	if c.Concurrent {
		line = fmt.Sprintf("seq 400 | xargs -P %d -I{} %s", max(s.Concurrency, 4), line)
	}
	if s.ReproPrelude != "" {
		line = s.ReproPrelude + "; " + line
	}
	return line
}

func crasherText(rc report.Crash, s FuzzSetting, c *result.FuzzCrash) string {
	var b strings.Builder
	fmt.Fprintf(&b, "class: %s\nendpoint: %s\nevidence: %s\n", rc.Class, rc.Endpoint, rc.Evidence)
	if len(rc.Frames) > 0 {
		fmt.Fprintf(&b, "frames: %s\n", strings.Join(rc.Frames, " ← "))
	}
	if c.Hole != "" {
		fmt.Fprintf(&b, "hole: %s\n", c.Hole)
	}
	fmt.Fprintf(&b, "shrink: %s\n", rc.Shrink)
	if rc.Concurrent {
		b.WriteString("needs concurrency: it shows only when copies of the request run at once\n")
	}
	fmt.Fprintf(&b, "\nstart the target:  %s\nreproduce (from the report folder):  %s\n\nrequest: %s %s\n", s.Server, rc.Repro,
		c.Method, c.Path)
	for _, h := range c.Header {
		fmt.Fprintf(&b, "header: %s: %s\n", h.Name, h.Value)
	}
	if q, err := url.QueryUnescape(c.Path); err == nil && q != c.Path {
		fmt.Fprintf(&b, "decoded: %s\n", q)
	}
	if len(c.Body) > 0 {
		fmt.Fprintf(&b, "body (%d bytes):\n%s\n", len(c.Body), c.Body)
	}
	if rc.Original != "" {
		fmt.Fprintf(&b, "\nas found, before shrinking: %s\n", rc.Original)
	}
	for _, a := range rc.Also {
		fmt.Fprintf(&b, "the same crash through: %s\n", a)
	}
	if c.Stderr != "" {
		head := c.Stderr
		if len(head) > 8000 {
			head = head[:8000] + "\n…"
		}
		fmt.Fprintf(&b, "\nthe target's stderr:\n%s\n", head)
	}
	return b.String()
}

func topReasons(m map[string]int64, n int) []string {
	keys := result.ByCount(m)
	return keys[:min(n, len(keys))]
}

func (r *FuzzReport) summaryLine() string {
	f := r.Fuzz
	refused := ""
	if f.Refused > 0 {
		refused = fmt.Sprintf("; %d refused in a whole reply (a JSON-RPC error or a tool's isError: the server said no, no crash)",
			f.Refused)
	}
	return fmt.Sprintf("%d inputs in %.0f s (%.0f a second) from %d clients; %d answered with a 4xx and the target lived%s; %d "+
		"restarts; shrinking took %.0f s",
		f.Inputs, f.SearchS, r.Latency.RPS, f.Concurrency, f.Rejected, refused, f.Restarts, f.ShrinkS)
}

// WriteTable prints the search's figures and each crash.
func (r *FuzzReport) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "%s against %s\n%s\n", r.Microload, r.Target, r.summaryLine())
	if len(r.Crashes) == 0 {
		fmt.Fprintln(w, "no input crashed, hung or panicked the target")
	}
	for i, c := range r.Crashes {
		how := ""
		if c.Concurrent {
			how = " (only under concurrent copies of the request)"
		}
		fmt.Fprintf(w, "  %d. %s at %s%s: %s\n     input: %s\n     %s\n     repro: %s\n", i+1, c.Class, c.Endpoint, how, c.Evidence,
			report.Ellipsis(c.Input, 300), c.Shrink, report.Ellipsis(c.Repro, 300))
		for _, a := range c.Also {
			fmt.Fprintf(w, "     the same crash through: %s\n", report.Ellipsis(a, 200))
		}
	}
	report.ListWarnings(w, r.Warnings)
}

// Markdown is report.md.
func (r *FuzzReport) Markdown() string {
	var b strings.Builder
	f := r.Fuzz
	fmt.Fprintf(&b, "# %s against %s\n\n%s.\n\nTemplates:\n\n", r.Microload, r.Target, r.summaryLine())
	for _, t := range f.Templates {
		fmt.Fprintf(&b, "- `%s`\n", t)
	}
	fmt.Fprintf(&b, "\nThe target was started with `%s`", f.Server)
	if f.MemLimitBytes > 0 {
		fmt.Fprintf(&b, " under a %s memory cap (RLIMIT_DATA)", report.FmtBytes(int64(f.MemLimitBytes)))
	}
	b.WriteString(".\n\n## Crashes\n\n")
	if len(r.Crashes) == 0 {
		b.WriteString("None: no input killed, hung or panicked the target.\n")
	}
	for i, c := range r.Crashes {
		fmt.Fprintf(&b, "### %d. %s at %s\n\n%s\n\n", i+1, c.Class, c.Endpoint, c.Evidence)
		if len(c.Frames) > 0 {
			fmt.Fprintf(&b, "Top of the stack: `%s`\n\n", strings.Join(c.Frames, "` ← `"))
		}
		fmt.Fprintf(&b, "Input: `%s`\n\n%s. Found after %.0f s, seen %d times.", report.Ellipsis(c.Input, 500), c.Shrink, c.FoundAfterS, c.Seen)
		if c.Concurrent {
			b.WriteString(" It shows only under concurrent copies of the request.")
		}
		for _, a := range c.Also {
			fmt.Fprintf(&b, "\n\nThe same crash (same class and frames) through: `%s`", report.Ellipsis(a, 300))
		}
		fmt.Fprintf(&b, "\n\n```sh\n%s\n```\n\nDetails and the target's stderr: `%s`.\n\n", c.Repro, c.File)
	}
	statuses := &report.Table{Columns: []report.Column{{Title: "status"}, {Title: "replies", Right: true}}}
	codes := make([]string, 0, len(f.Statuses))
	for c := range f.Statuses {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		statuses.AddRow(c, fmt.Sprint(f.Statuses[c]))
	}
	b.WriteString("## Replies\n\n" + statuses.Markdown())
	if len(f.ErrorReplies) > 0 {
		reasons := &report.Table{Columns: []report.Column{{Title: "error reply or transport error (numbers elided)"}, {Title: "count", Right: true}}}
		for _, reason := range topReasons(f.ErrorReplies, 20) {
			reasons.AddRow(report.Ellipsis(reason, 150), fmt.Sprint(f.ErrorReplies[reason]))
		}
		b.WriteString("\n" + reasons.Markdown())
	}
	report.WriteWarnings(&b, r.Warnings)
	return b.String()
}
