package report

import (
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/ws"
)

// WS is report.json of a WebSocket fan-out (`probe ws`, seed 004): were
// the events delivered, once, to their rooms, and how fast; how long the
// connections took to be ready; what the faults did; what the target and
// probe spent; and, profiled, what the target's fan-out waited on.
type WS struct {
	Kind        string              `json:"kind"` // "ws"
	Target      string              `json:"target"`
	FixtureMode string              `json:"fixture_mode,omitempty"`
	Config      WSConfig            `json:"config"`
	Verdict     string              `json:"verdict"`
	Ready       WSReady             `json:"ready"`
	Totals      ws.Counts           `json:"totals"`
	Delivery    WSLatency           `json:"delivery"`
	Rounds      []WSRound           `json:"rounds"`
	Rooms       []WSRoom            `json:"rooms"`
	Faults      WSFaults            `json:"faults"`
	Server      WSProcess           `json:"server"`
	Probe       WSProcess           `json:"probe"`
	Findings    []analyzers.Finding `json:"findings"`
	// Unexplained is the target's own code that took CPU while it fanned
	// out and no finding explains, largest first.
	Unexplained []analyzers.Unexplained `json:"unexplained,omitempty"`
	Mix         *RunReport              `json:"mix,omitempty"`
	Interrupted bool                    `json:"interrupted"`
	Warnings    []probes.Warning        `json:"warnings"`
	Thresholds  []Threshold             `json:"thresholds,omitempty"`

	latency *hdrhistogram.Histogram
	files   map[string][]byte
}

// WSConfig is what was asked for.
type WSConfig struct {
	Connections     int     `json:"connections"`
	Rooms           int     `json:"rooms"`
	Events          int     `json:"events_per_room_per_round"`
	Rounds          int     `json:"rounds"`
	PauseS          float64 `json:"pause_s"`
	IdleS           float64 `json:"idle_s,omitempty"`
	Drop            int     `json:"drop,omitempty"`
	ConnectRate     float64 `json:"connect_rate"`
	Auth            string  `json:"auth"`
	Publish         string  `json:"publish"`
	DeliverTimeoutS float64 `json:"deliver_timeout_s"`
	ReplayClaimed   bool    `json:"replay_claimed,omitempty"`
	FDLimit         uint64  `json:"fd_limit,omitempty"`
	SourceAddrs     int     `json:"source_addrs"`
}

// WSReady is the connections' start.
type WSReady struct {
	Seconds      float64 `json:"seconds"` // from the first upgrade until the last connection was ready
	Ready        int     `json:"ready"`
	Refused      int     `json:"refused"`
	FirstRefusal string  `json:"first_refusal,omitempty"`
}

// WSLatency is delivery time from publish to receipt, in ms.
type WSLatency struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

func wsLatency(h *hdrhistogram.Histogram) WSLatency {
	if h == nil || h.TotalCount() == 0 {
		return WSLatency{}
	}
	ms := func(q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1000 }
	return WSLatency{Count: h.TotalCount(), P50: ms(50), P95: ms(95), P99: ms(99), Max: float64(h.Max()) / 1000}
}

// WSRound is one round.
type WSRound struct {
	Round         int                     `json:"round"`
	Published     int                     `json:"published"`
	PublishErrors int                     `json:"publish_errors"`
	IdleBeforeS   float64                 `json:"idle_before_s,omitempty"`
	Away          int                     `json:"away,omitempty"`
	Counts        ws.Counts               `json:"counts"`
	Delivery      WSLatency               `json:"delivery"`
	TookS         float64                 `json:"took_s"`
	Top           []analyzers.ShareOfWork `json:"cpu_top,omitempty"` // the round's CPU by work, profiled
}

// WSRoom is one room's counts.
type WSRoom struct {
	Room string `json:"room"`
	ws.Counts
}

// WSFaults are the connections that went away and what came back.
type WSFaults struct {
	Dropped     int   `json:"dropped"`     // closed by probe (--drop)
	Reconnected int   `json:"reconnected"` // of those, ready again
	Lost        int   `json:"lost"`        // closed by the server or the network
	Replayed    int64 `json:"replayed"`    // events of the round they were away for, received after
	Garbage     int64 `json:"garbage"`     // messages after ready without an event or with a broken marker, and invalid frames
}

// WSProcess is a process's cost.
type WSProcess struct {
	PID             int     `json:"pid,omitempty"`
	RSSBeforeBytes  int64   `json:"rss_before_bytes,omitempty"`
	RSSPeakBytes    int64   `json:"rss_peak_bytes"`
	RSSPerConnBytes int64   `json:"rss_per_connection_bytes"`
	FDsPeak         int     `json:"fds_peak,omitempty"`
	CPUSeconds      float64 `json:"cpu_s"`
}

// WSAnalysis is what the pipeline's analyzers made of the profiles.
type WSAnalysis struct {
	Tops        [][]analyzers.ShareOfWork // by round
	Findings    []analyzers.Finding
	Unexplained []analyzers.Unexplained
}

// WSOf makes the report of a run.
func WSOf(res *ws.Result, target, mode string, cfg WSConfig, a WSAnalysis, pid int) *WS {
	d := &WS{Kind: "ws", Target: target, FixtureMode: mode, Config: cfg, Totals: res.Totals, Delivery: wsLatency(res.Latency),
		Ready:    WSReady{Seconds: res.Ready.Seconds(), Ready: res.ReadyCount, Refused: res.Refused, FirstRefusal: res.FirstRefusal},
		Faults:   WSFaults{Dropped: res.Dropped, Reconnected: res.Reconnected, Lost: res.Lost, Replayed: res.Replayed, Garbage: res.Garbage},
		Findings: a.Findings, Interrupted: res.Interrupted, latency: res.Latency, files: map[string][]byte{}}
	for i, rd := range res.Rounds {
		r := WSRound{Round: rd.Round, Published: rd.Published, PublishErrors: rd.PublishErrors, IdleBeforeS: rd.IdleBefore.Seconds(),
			Away: rd.Away, Counts: rd.Counts, Delivery: wsLatency(rd.Latency), TookS: rd.Took.Seconds()}
		if i < len(a.Tops) {
			r.Top = a.Tops[i]
		}
		d.Rounds = append(d.Rounds, r)
	}
	for i, c := range res.PerRoom {
		d.Rooms = append(d.Rooms, WSRoom{Room: res.RoomName(i), Counts: c})
	}
	perConn := func(b int64) int64 {
		if res.ReadyCount == 0 {
			return 0
		}
		return b / int64(res.ReadyCount)
	}
	d.Server = WSProcess{PID: pid, RSSBeforeBytes: res.ServerRSSIdle, RSSPeakBytes: res.ServerRSSPeak,
		RSSPerConnBytes: perConn(res.ServerRSSPeak - res.ServerRSSIdle), FDsPeak: res.ServerFDsPeak, CPUSeconds: res.ServerCPU.Seconds()}
	d.Probe = WSProcess{RSSPeakBytes: res.OwnRSSPeak, RSSPerConnBytes: perConn(res.OwnRSSPeak), CPUSeconds: res.OwnCPU.Seconds()}
	for _, w := range res.Warnings {
		d.Warnings = append(d.Warnings, probes.Warning{Kind: "ws", Message: w})
	}
	for name, raw := range res.Raw {
		d.files["profiles/"+name] = raw
	}
	if d.Findings == nil {
		d.Findings = []analyzers.Finding{} // none found: [] in report.json, not null
	}
	d.Verdict = d.verdict()
	return d
}

// Failed says whether an event was missing, delivered twice or to the
// wrong room: the run fails (exit 1) as failed checks do.
func (d *WS) Failed() bool {
	return d.Totals.Missing > 0 || d.Totals.Duplicated > 0 || d.Totals.Misrouted > 0 || d.publishErrors() > 0
}

// publishErrors are the events the target refused to publish: a failed
// check of the run, though no connection expects them.
func (d *WS) publishErrors() int {
	n := 0
	for _, r := range d.Rounds {
		n += r.PublishErrors
	}
	return n
}

func (d *WS) verdict() string {
	t := d.Totals
	if !d.Failed() {
		return fmt.Sprintf("%d of %d deliveries, every event once and to its room", t.Delivered, t.Expected)
	}
	var bad []string
	for _, p := range []struct {
		n    int64
		what string
	}{{t.Missing, "missing"}, {t.Duplicated, "duplicated"}, {t.Misrouted, "misrouted (another room's)"}} {
		if p.n > 0 {
			bad = append(bad, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	if n := d.publishErrors(); n > 0 {
		bad = append(bad, fmt.Sprintf("%d publishes refused by the target", n))
	}
	if f := d.Faults; f.Lost > 0 { // why events went missing: the connections the server broke
		why := fmt.Sprintf("%d connections closed by the server or the network", f.Lost)
		if f.Garbage > 0 {
			why += fmt.Sprintf(" (%d garbage messages or frames)", f.Garbage)
		}
		bad = append(bad, why)
	}
	return fmt.Sprintf("%d of %d deliveries; %s", t.Delivered, t.Expected, strings.Join(bad, ", "))
}

func (d *WS) JSON() ([]byte, error) { return marshal(d) }

// Page is report.html, the run drawn; report.md beside it.
func (d *WS) Page() string { return "report.html" }

func (d *WS) Files() (map[string][]byte, error) {
	files := map[string][]byte{"report.html": []byte(d.HTML())}
	for k, v := range d.files {
		files[k] = v
	}
	if d.latency != nil && d.latency.TotalCount() > 0 {
		files["delivery.hgrm"] = hgrm(d.latency)
	}
	if d.Mix != nil {
		mix, err := d.Mix.Files()
		if err != nil {
			return nil, err
		}
		for k, v := range mix {
			if k != "report.html" {
				files["mix/"+k] = v
			}
		}
	}
	return files, nil
}

// roundsTable is the checks and the delivery time of each round.
func (d *WS) roundsTable() *Table {
	t := &Table{Columns: []Column{{Title: "round"}, {Title: "expected", Right: true}, {Title: "delivered", Right: true},
		{Title: "missing", Right: true}, {Title: "dup", Right: true}, {Title: "misrouted", Right: true}, {Title: "out of order", Right: true},
		{Title: "p50", Right: true}, {Title: "p95", Right: true}, {Title: "p99", Right: true}, {Title: "max", Right: true}, {Title: "note"}}}
	for _, r := range d.Rounds {
		var note []string
		if r.IdleBeforeS > 0 {
			note = append(note, fmt.Sprintf("after %gs idle", r.IdleBeforeS))
		}
		if r.Away > 0 {
			note = append(note, fmt.Sprintf("%d away", r.Away))
		}
		if r.PublishErrors > 0 {
			note = append(note, fmt.Sprintf("%d publishes failed", r.PublishErrors))
		}
		if len(r.Top) > 0 {
			note = append(note, fmt.Sprintf("CPU: %s %.0f%%", r.Top[0].Work, 100*r.Top[0].Share))
		}
		c := r.Counts
		t.AddRow(fmt.Sprint(r.Round), fmt.Sprint(c.Expected), fmt.Sprint(c.Delivered), fmt.Sprint(c.Missing), fmt.Sprint(c.Duplicated),
			fmt.Sprint(c.Misrouted), fmt.Sprint(c.OutOfOrder), fmtMS(r.Delivery.P50), fmtMS(r.Delivery.P95), fmtMS(r.Delivery.P99),
			fmtMS(r.Delivery.Max), strings.Join(note, "; "))
	}
	c, l := d.Totals, d.Delivery
	t.AddRow("all", fmt.Sprint(c.Expected), fmt.Sprint(c.Delivered), fmt.Sprint(c.Missing), fmt.Sprint(c.Duplicated),
		fmt.Sprint(c.Misrouted), fmt.Sprint(c.OutOfOrder), fmtMS(l.P50), fmtMS(l.P95), fmtMS(l.P99), fmtMS(l.Max), "")
	return t
}

// badRooms is the rooms with a wrong delivery, at most 20: where to look.
func (d *WS) badRooms() *Table {
	t := &Table{Columns: []Column{{Title: "room"}, {Title: "expected", Right: true}, {Title: "missing", Right: true},
		{Title: "dup", Right: true}, {Title: "misrouted", Right: true}, {Title: "out of order", Right: true}}}
	for _, r := range d.Rooms {
		if r.Missing+r.Duplicated+r.Misrouted+r.OutOfOrder == 0 {
			continue
		}
		if len(t.Rows) == 20 {
			break
		}
		t.AddRow(r.Room, fmt.Sprint(r.Expected), fmt.Sprint(r.Missing), fmt.Sprint(r.Duplicated), fmt.Sprint(r.Misrouted), fmt.Sprint(r.OutOfOrder))
	}
	return t
}

func (d *WS) summaryLines() []string {
	c := d.Config
	lines := []string{
		fmt.Sprintf("%d connections in %d rooms, %d events a room a round, %d rounds (%gs apart), published by %s, auth %s",
			c.Connections, c.Rooms, c.Events, c.Rounds, c.PauseS, c.Publish, c.Auth),
		fmt.Sprintf("ready: %d of %d in %.2fs (at %g/s over %d source addresses); %d refused",
			d.Ready.Ready, c.Connections, d.Ready.Seconds, c.ConnectRate, c.SourceAddrs, d.Ready.Refused),
	}
	if d.Ready.FirstRefusal != "" {
		lines = append(lines, "first refusal: "+d.Ready.FirstRefusal)
	}
	f := d.Faults
	if c.Drop > 0 || f.Lost > 0 || f.Garbage > 0 {
		replay := "the server replayed none of what they missed"
		if f.Replayed > 0 {
			replay = fmt.Sprintf("the server replayed %d events they missed", f.Replayed)
		}
		if c.ReplayClaimed && f.Replayed == 0 {
			replay += ", though it claims to"
		}
		lines = append(lines, fmt.Sprintf("faults: %d dropped on purpose, %d reconnected (%s); %d lost to the server; %d garbage messages or frames",
			f.Dropped, f.Reconnected, replay, f.Lost, f.Garbage))
	}
	s, p := d.Server, d.Probe
	srv := "target: not seen"
	if s.PID > 0 {
		srv = fmt.Sprintf("target: %s RSS at most (%s a connection over its %s before), %d fds, %.2f CPU s",
			fmtBytes(s.RSSPeakBytes), fmtBytes(s.RSSPerConnBytes), fmtBytes(s.RSSBeforeBytes), s.FDsPeak, s.CPUSeconds)
	}
	lines = append(lines, fmt.Sprintf("%s; probe: %s RSS (%s a connection), %.2f CPU s", srv, fmtBytes(p.RSSPeakBytes), fmtBytes(p.RSSPerConnBytes), p.CPUSeconds))
	if d.Interrupted {
		lines = append(lines, "interrupted: what was measured until then")
	}
	return lines
}

func (d *WS) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "ws against %s: %s\n", d.Target, d.Verdict)
	d.roundsTable().Text(w)
	if t := d.badRooms(); len(t.Rows) > 0 {
		fmt.Fprintln(w, "rooms with a wrong delivery:")
		t.Text(w)
	}
	for _, l := range d.summaryLines() {
		fmt.Fprintf(w, "  %s\n", l)
	}
	for _, f := range d.Findings {
		fmt.Fprintf(w, "  finding %s (%s): %s\n", f.Rule, f.Severity, ellipsis(f.Evidence, 300))
	}
	for i, u := range d.Unexplained {
		if i == 3 {
			break
		}
		fmt.Fprintf(w, "  CPU no finding explains: %s %.0f%%\n", u.Function, 100*u.CPUShare)
	}
	if d.Mix != nil {
		fmt.Fprintln(w, "alongside (--mix):")
		d.Mix.operationsTable().Text(w)
	}
	listWarnings(w, d.Warnings)
	listThresholds(w, d.Thresholds)
}

func (d *WS) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# ws against %s\n\n**%s**.\n\n", d.Target, d.Verdict)
	for _, l := range d.summaryLines() {
		b.WriteString("- " + l + "\n")
	}
	b.WriteString("\n## Rounds\n\n")
	b.WriteString(d.roundsTable().Markdown())
	if t := d.badRooms(); len(t.Rows) > 0 {
		b.WriteString("\n## Rooms with a wrong delivery\n\n")
		b.WriteString(t.Markdown())
	}
	if len(d.Findings) > 0 {
		b.WriteString("\n## Findings\n\n")
		for _, f := range d.Findings {
			fmt.Fprintf(&b, "- **%s** (%s, %s): %s\n  Fix: %s\n", f.Rule, f.Class, f.Severity, f.Evidence, f.Suggestion)
		}
	}
	if len(d.Unexplained) > 0 {
		b.WriteString("\n## CPU no finding explains\n\n")
		for _, u := range d.Unexplained {
			fmt.Fprintf(&b, "- `%s` %.0f%% (%s)\n", u.Function, 100*u.CPUShare, strings.Join(u.Path, " → "))
		}
	}
	if d.Mix != nil {
		fmt.Fprintf(&b, "\n## Alongside: %s (--mix)\n\n", d.Mix.Microload)
		b.WriteString(d.Mix.operationsTable().Markdown())
	}
	writeWarnings(&b, d.Warnings)
	writeThresholds(&b, d.Thresholds)
	return b.String()
}

// HTML is report.html: the same, with the delivery latency curve.
func (d *WS) HTML() string {
	esc := html.EscapeString
	var b strings.Builder
	title := "ws against " + d.Target
	b.WriteString(pageHead("probe " + title))
	fmt.Fprintf(&b, "<h1>%s</h1><p><b>%s</b>.</p><ul>", esc(title), esc(d.Verdict))
	for _, l := range d.summaryLines() {
		fmt.Fprintf(&b, "<li>%s</li>", esc(l))
	}
	b.WriteString("</ul><h2>Rounds</h2>")
	b.WriteString(d.roundsTable().HTML())
	if t := d.badRooms(); len(t.Rows) > 0 {
		b.WriteString("<h2>Rooms with a wrong delivery</h2>" + t.HTML())
	}
	if d.latency != nil && d.latency.TotalCount() > 0 {
		b.WriteString(latencyCurve("delivery by percentile (ms)", d.latency))
	}
	if len(d.Findings) > 0 {
		b.WriteString("<h2>Findings</h2><ol>")
		for _, f := range d.Findings {
			fmt.Fprintf(&b, "<li><b>%s</b> (%s, %s): %s<br>Fix: %s</li>", esc(f.Rule), esc(f.Class), esc(f.Severity), esc(f.Evidence), esc(f.Suggestion))
		}
		b.WriteString("</ol>")
	}
	if d.Mix != nil {
		fmt.Fprintf(&b, "<h2>Alongside: %s (--mix)</h2>%s", esc(d.Mix.Microload), d.Mix.operationsTable().HTML())
	}
	writeWarningsHTML(&b, d.Warnings, 2)
	writeThresholdsHTML(&b, d.Thresholds, 2)
	b.WriteString("</body></html>\n")
	return b.String()
}
