// Package wsreport is probe ws's report: a WebSocket fan-out's delivery,
// rounds, rooms and faults, written with the kit of package report.
package wsreport

import (
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/analyzers/fanout"
	"github.com/probehq/probe/lib/textline"
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
	Totals      result.WSCounts     `json:"totals"`
	Delivery    WSLatency           `json:"delivery"`
	Rounds      []WSRound           `json:"rounds"`
	Rooms       []WSRoom            `json:"rooms"`
	Faults      WSFaults            `json:"faults"`
	Server      WSProcess           `json:"server"`
	Probe       WSProcess           `json:"probe"`
	Findings    []analyzers.Finding `json:"findings"`
	// Experiment is the per-delivery experiment (profiled): which work
	// the target does once for every subscriber of an event.
	Experiment *WSExperiment `json:"experiment,omitempty"`
	// Unexplained is the target's own code that took CPU while it fanned
	// out and no finding explains, largest first.
	Unexplained []analyzers.Unexplained `json:"unexplained,omitempty"`
	Mix         *report.Run             `json:"mix,omitempty"`
	Interrupted bool                    `json:"interrupted"`
	Warnings    []result.Warning        `json:"warnings"`
	Thresholds  []report.Threshold      `json:"thresholds,omitempty"`

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
	// ReconnectRefused are the dropped connections (--drop) whose upgrade
	// failed again.
	ReconnectRefused int `json:"reconnect_refused,omitempty"`
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
	Counts        result.WSCounts         `json:"counts"`
	Delivery      WSLatency               `json:"delivery"`
	TookS         float64                 `json:"took_s"`
	Top           []analyzers.ShareOfWork `json:"cpu_top,omitempty"` // the round's CPU by work, profiled
	// OwnTop is the round's CPU by the innermost own function, profiled.
	OwnTop []analyzers.ShareOfWork `json:"cpu_own_top,omitempty"`
	// ServerCPUS is the target's CPU over the round (local targets);
	// Goroutines its goroutines as the round began (profiled).
	ServerCPUS float64 `json:"server_cpu_s,omitempty"`
	Goroutines int     `json:"goroutines,omitempty"`
	// WallProfile is the round's fgprof profile in the run's folder (--wall).
	WallProfile string `json:"wall_profile,omitempty"`
}

// WSExperiment is the per-delivery experiment: slots of a CPU profile
// each, events published to the rooms and to a room no connection joined
// in turn, and each function's CPU per event in both.
type WSExperiment struct {
	EmptyRoom string `json:"empty_room"`
	Skipped   string `json:"skipped,omitempty"`
	// Void says why what was measured proves nothing: the empty room's
	// events reached connections (EmptyReceipts of them, at EmptyConns).
	Void               string                `json:"void,omitempty"`
	EmptyReceipts      int64                 `json:"empty_room_receipts"`
	EmptyConns         int64                 `json:"empty_room_receipts_connections"`
	Retried            int                   `json:"retried_slots,omitempty"`
	Slots              []WSExperimentSlot    `json:"slots"`
	DeliveriesPerEvent float64               `json:"deliveries_per_event"`
	Work               []fanout.DeliveryWork `json:"work"`
}

// WSExperimentSlot is one slot of the experiment.
type WSExperimentSlot struct {
	Kind       string `json:"kind"` // "rooms" or "empty"
	Events     int    `json:"events"`
	Failed     int    `json:"failed,omitempty"`
	Deliveries int64  `json:"deliveries"`
	Arrived    int64  `json:"arrived,omitempty"`
	Late       int64  `json:"late,omitempty"`
}

// WSRoom is one room's counts.
type WSRoom struct {
	Room string `json:"room"`
	result.WSCounts
}

// WSFaults are the connections that went away and what came back.
type WSFaults struct {
	Dropped     int   `json:"dropped"`        // closed by probe (--drop)
	Reconnected int   `json:"reconnected"`    // of those, ready again
	Lost        int   `json:"lost"`           // closed by the server or the network
	Replayed    int64 `json:"replayed"`       // events of the round they were away for, received after
	Garbage     int64 `json:"garbage"`        // broken markers, messages over --read-limit, invalid frames
	Unacked     int64 `json:"unacknowledged"` // receipts of events whose publish failed: not deliveries, no latency
	Other       int64 `json:"other"`          // messages after ready without an event (the server's own: pings, notices; or noise), not deliveries
}

// WSProcess is a process's cost.
type WSProcess struct {
	PID             int     `json:"pid,omitempty"`
	RSSBeforeBytes  int64   `json:"rss_before_bytes,omitempty"`
	RSSPeakBytes    int64   `json:"rss_peak_bytes"`
	RSSPerConnBytes int64   `json:"rss_per_connection_bytes"`
	FDsPeak         int     `json:"fds_peak,omitempty"`
	CPUSeconds      float64 `json:"cpu_s"`
	// Timeline is the target about once a second: CPU, memory,
	// descriptors, threads, and goroutines once a round (local targets).
	Timeline []result.WSSample `json:"timeline,omitempty"`
}

// WSAnalysis is what the pipeline's analyzers made of the profiles.
type WSAnalysis struct {
	Tops        [][]analyzers.ShareOfWork // by round
	OwnTops     [][]analyzers.ShareOfWork // by round
	Experiment  *WSExperiment
	Findings    []analyzers.Finding
	Unexplained []analyzers.Unexplained
}

// WSOf makes the report of a run.
func WSOf(res *result.WS, target, mode string, cfg WSConfig, a WSAnalysis, pid int) *WS {
	d := &WS{Kind: "ws", Target: target, FixtureMode: mode, Config: cfg, Totals: res.Totals, Delivery: wsLatency(res.Latency),
		Ready: WSReady{Seconds: res.Ready.Seconds(), Ready: res.ReadyCount, Refused: res.Refused, FirstRefusal: res.FirstRefusal,
			ReconnectRefused: res.ReconnectRefused},
		Faults: WSFaults{Dropped: res.Dropped, Reconnected: res.Reconnected, Lost: res.Lost, Replayed: res.Replayed,
			Garbage: res.Garbage, Other: res.Other, Unacked: res.Unacked},
		Findings: a.Findings, Interrupted: res.Interrupted, latency: res.Latency, files: map[string][]byte{}}
	for i, rd := range res.Rounds {
		r := WSRound{Round: rd.Round, Published: rd.Published, PublishErrors: rd.PublishErrors, IdleBeforeS: rd.IdleBefore.Seconds(),
			Away: rd.Away, Counts: rd.Counts, Delivery: wsLatency(rd.Latency), TookS: rd.Took.Seconds()}
		if i < len(a.Tops) {
			r.Top = a.Tops[i]
		}
		if i < len(a.OwnTops) {
			r.OwnTop = a.OwnTops[i]
		}
		r.ServerCPUS, r.Goroutines = rd.ServerCPU.Seconds(), rd.Goroutines
		if name := fmt.Sprintf("wall-round-%02d.pb.gz", rd.Round); res.Raw[name] != nil {
			r.WallProfile = "profiles/" + name
		}
		d.Rounds = append(d.Rounds, r)
	}
	for i, c := range res.PerRoom {
		d.Rooms = append(d.Rooms, WSRoom{Room: res.RoomName(i), WSCounts: c})
	}
	perConn := func(b int64) int64 {
		if res.ReadyCount == 0 {
			return 0
		}
		return b / int64(res.ReadyCount)
	}
	d.Server = WSProcess{PID: pid, RSSBeforeBytes: res.ServerRSSIdle, RSSPeakBytes: res.ServerRSSPeak,
		RSSPerConnBytes: perConn(res.ServerRSSPeak - res.ServerRSSIdle), FDsPeak: res.ServerFDsPeak, CPUSeconds: res.ServerCPU.Seconds(),
		Timeline: res.Timeline}
	d.Experiment = a.Experiment
	d.Probe = WSProcess{RSSPeakBytes: res.OwnRSSPeak, RSSPerConnBytes: perConn(res.OwnRSSPeak), CPUSeconds: res.OwnCPU.Seconds()}
	for _, w := range res.Warnings {
		d.Warnings = append(d.Warnings, result.Warning{Kind: "ws", Message: w})
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
// wrong room, a publish or an upgrade refused: the run fails (exit 1) as
// failed checks do. A refused upgrade is a connection the run never
// checked: "every event once" of the few the target let in says nothing
// of the ones it turned away.
func (d *WS) Failed() bool {
	return d.Totals.Missing > 0 || d.Totals.Duplicated > 0 || d.Totals.Misrouted > 0 || d.publishErrors() > 0 ||
		d.Ready.Refused > 0 || d.Ready.ReconnectRefused > 0
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
	if r := d.Ready; r.Refused > 0 || r.ReconnectRefused > 0 {
		var n []string
		if r.Refused > 0 {
			n = append(n, fmt.Sprintf("%d of %d upgrades refused or never ready", r.Refused, d.Config.Connections))
		}
		if r.ReconnectRefused > 0 {
			n = append(n, fmt.Sprintf("%d of %d reconnections refused", r.ReconnectRefused, d.Faults.Dropped))
		}
		refused := strings.Join(n, ", ")
		if r.FirstRefusal != "" {
			refused += " (first: " + textline.Of(r.FirstRefusal, 160) + ")"
		}
		bad = append(bad, refused)
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

func (d *WS) JSON() ([]byte, error) { return report.Marshal(d) }

// Page is report.html, the run drawn; report.md beside it.
func (d *WS) Page() string { return "report.html" }

func (d *WS) Files() (map[string][]byte, error) {
	files := report.PageFiles(d.HTML(), d.files)
	if d.latency != nil && d.latency.TotalCount() > 0 {
		files["delivery.hgrm"] = report.HGRM(d.latency)
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
func (d *WS) roundsTable() *report.Table {
	t := &report.Table{Columns: []report.Column{{Title: "round"}, {Title: "expected", Right: true}, {Title: "delivered", Right: true},
		{Title: "missing", Right: true}, {Title: "dup", Right: true}, {Title: "misrouted", Right: true}, {Title: "out of order", Right: true},
		{Title: "p50", Right: true}, {Title: "p95", Right: true}, {Title: "p99", Right: true}, {Title: "max", Right: true},
		{Title: "goroutines", Right: true}, {Title: "target CPU", Right: true}, {Title: "note"}}}
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
		if w := r.cpuWords(); w != "" {
			note = append(note, "CPU: "+w)
		}
		c := r.Counts
		gor, cpu := "", ""
		if r.Goroutines > 0 {
			gor = fmt.Sprint(r.Goroutines)
		}
		if r.ServerCPUS > 0 {
			cpu = fmt.Sprintf("%.2fs", r.ServerCPUS)
			if r.TookS > 0 {
				cpu += fmt.Sprintf(" (%.1f cores)", r.ServerCPUS/r.TookS)
			}
		}
		t.AddRow(fmt.Sprint(r.Round), fmt.Sprint(c.Expected), fmt.Sprint(c.Delivered), fmt.Sprint(c.Missing), fmt.Sprint(c.Duplicated),
			fmt.Sprint(c.Misrouted), fmt.Sprint(c.OutOfOrder), report.FmtMS(r.Delivery.P50), report.FmtMS(r.Delivery.P95), report.FmtMS(r.Delivery.P99),
			report.FmtMS(r.Delivery.Max), gor, cpu, strings.Join(note, "; "))
	}
	c, l := d.Totals, d.Delivery
	t.AddRow("all", fmt.Sprint(c.Expected), fmt.Sprint(c.Delivered), fmt.Sprint(c.Missing), fmt.Sprint(c.Duplicated),
		fmt.Sprint(c.Misrouted), fmt.Sprint(c.OutOfOrder), report.FmtMS(l.P50), report.FmtMS(l.P95), report.FmtMS(l.P99), report.FmtMS(l.Max), "", "", "")
	return t
}

// cpuWords is what the round's profiled CPU went to: its largest own
// functions and the catalog's largest named work, with their shares
// ("other", work no rule names, is left out: the functions say it).
func (r WSRound) cpuWords() string {
	var parts []string
	for _, w := range r.OwnTop {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", shortFunc(w.Work), 100*w.Share))
	}
	for _, w := range r.Top {
		if w.Work != "other" && w.Share >= 0.05 {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", w.Work, 100*w.Share))
			break
		}
	}
	return strings.Join(parts, ", ")
}

// shortFunc is a function's name without its package's path:
// site.tokenHash for github.com/…/fixtures/site.tokenHash.
func shortFunc(fn string) string {
	if i := strings.IndexAny(fn, "(["); i >= 0 {
		return fn[strings.LastIndexByte(fn[:i], '/')+1:]
	}
	return fn[strings.LastIndexByte(fn, '/')+1:]
}

// experimentTable is the per-delivery experiment's figures of each
// function it measured.
func (d *WS) experimentTable() *report.Table {
	t := &report.Table{Columns: []report.Column{{Title: "function"}, {Title: "µs/event", Right: true}, {Title: "halves", Right: true},
		{Title: "no subscribers", Right: true}, {Title: "µs/delivery", Right: true}, {Title: "share", Right: true}, {Title: "verdict"}}}
	if d.Experiment == nil {
		return t
	}
	for _, w := range d.Experiment.Work {
		fn := w.Function
		if w.Calls != "" {
			fn += " → " + w.Calls
		}
		t.AddRow(fn, fmt.Sprintf("%.1f", w.PerEventUS), fmt.Sprintf("%.1f / %.1f", w.HalvesUS[0], w.HalvesUS[1]),
			fmt.Sprintf("%.1f", w.EmptyPerEventUS), fmt.Sprintf("%.2f", w.PerDeliveryUS), fmt.Sprintf("%.0f%%", 100*w.Share), w.Verdict)
	}
	return t
}

// experimentLine says what the experiment did, in one line.
func (d *WS) experimentLine() string {
	e := d.Experiment
	if e == nil {
		return ""
	}
	if e.Skipped != "" {
		return "per-delivery experiment skipped: " + e.Skipped
	}
	if e.Void != "" {
		return "per-delivery experiment void: " + e.Void
	}
	var rooms, empty int
	for _, s := range e.Slots {
		if s.Kind == "rooms" {
			rooms += s.Events
		} else {
			empty += s.Events
		}
	}
	// What the verdict covers: the own functions measured, their share of
	// the CPU while the target fanned out (the rest is the runtime's, the
	// libraries' with no own code above, and the socket writes).
	var measured float64
	judged := 0
	for _, w := range e.Work {
		if w.Calls == "" {
			measured += w.Share
			if w.Verdict == "per-event" || w.Verdict == "per-delivery" || w.Verdict == "in-library" {
				judged++
			}
		}
	}
	found := fmt.Sprintf("nothing found done once per delivery (writing to the sockets and libraries' fan-out aside); "+
		"the own functions measured took %.0f%% of the target's CPU in the slots with subscribers, %d of them with samples enough to judge",
		100*measured, judged)
	var per, lib []string
	for _, w := range e.Work {
		fn := shortFunc(w.Function)
		if w.Calls != "" {
			fn += " → " + shortFunc(w.Calls)
		}
		switch w.Verdict {
		case "per-delivery":
			per = append(per, fmt.Sprintf("%s (%.0f%%)", fn, 100*w.Share))
		case "in-library":
			lib = append(lib, fmt.Sprintf("%s (%.0f%%, %.2f µs a delivery)", fn, 100*w.Share, w.PerDeliveryUS))
		}
	}
	if len(per) > 0 {
		found = "done once per delivery: " + strings.Join(per, ", ")
	}
	if len(lib) > 0 {
		found += "; grew with subscribers inside a library's call, not claimed (most likely the library handing each " +
			"subscriber the event; a finding only if the own function calls it once per subscriber): " + strings.Join(lib, ", ")
	}
	retried := ""
	if e.Retried > 0 {
		retried = fmt.Sprintf(" (%d rooms slots run again with fewer events, their deliveries having arrived after their profile)",
			e.Retried)
	}
	return fmt.Sprintf("per-delivery experiment: %d events to the rooms (%.0f deliveries each) and %d to %s, which no connection "+
		"joined, a CPU profile a second in turn%s; %s",
		rooms, e.DeliveriesPerEvent, empty, e.EmptyRoom, retried, found)
}

// badRooms is the rooms with a wrong delivery, at most 20: where to look.
func (d *WS) badRooms() *report.Table {
	t := &report.Table{Columns: []report.Column{{Title: "room"}, {Title: "expected", Right: true}, {Title: "missing", Right: true},
		{Title: "dup", Right: true}, {Title: "misrouted", Right: true}, {Title: "out of order", Right: true}}}
	for _, r := range d.Rooms {
		if r.Missing+r.Duplicated+r.Misrouted+r.OutOfOrder == 0 {
			continue
		}
		if len(t.Rows) == 20 {
			break
		}
		t.AddRow(r.Room, fmt.Sprint(r.Expected), fmt.Sprint(r.Missing), fmt.Sprint(r.Duplicated), fmt.Sprint(r.Misrouted),
			fmt.Sprint(r.OutOfOrder))
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
		lines = append(lines, fmt.Sprintf("faults: %d dropped on purpose, %d reconnected (%s); %d lost to the server; %d "+
			"garbage messages or frames",
			f.Dropped, f.Reconnected, replay, f.Lost, f.Garbage))
	}
	if f.Unacked > 0 {
		lines = append(lines, fmt.Sprintf("unacknowledged: %d receipts of events whose publish failed (refused or timed out), "+
			"which the server delivered anyway: not deliveries, no latency", f.Unacked))
	}
	if f.Other > 0 {
		lines = append(lines, fmt.Sprintf("other messages: %d after ready without an event (the server's own, as pings or "+
			"notices, or noise): not deliveries, not garbage", f.Other))
	}
	s, p := d.Server, d.Probe
	srv := "target: not seen"
	if s.PID > 0 {
		srv = fmt.Sprintf("target: %s RSS at most (%s a connection over its %s before), %d fds, %.2f CPU s",
			report.FmtBytes(s.RSSPeakBytes), report.FmtBytes(s.RSSPerConnBytes), report.FmtBytes(s.RSSBeforeBytes), s.FDsPeak, s.CPUSeconds)
	}
	lines = append(lines, fmt.Sprintf("%s; probe: %s RSS (%s a connection), %.2f CPU s", srv, report.FmtBytes(p.RSSPeakBytes),
		report.FmtBytes(p.RSSPerConnBytes), p.CPUSeconds))
	if l := d.timelineLine(); l != "" {
		lines = append(lines, l)
	}
	if l := d.experimentLine(); l != "" {
		lines = append(lines, l)
	}
	if d.Interrupted {
		lines = append(lines, "interrupted: what was measured until then")
	}
	return lines
}

// timelineLine sums up the target's timeline: its busiest second and
// its most threads (the samples are in report.json).
func (d *WS) timelineLine() string {
	tl := d.Server.Timeline
	if len(tl) < 2 {
		return ""
	}
	var peak result.WSSample
	threads := 0
	for _, s := range tl {
		if s.CPUCores > peak.CPUCores {
			peak = s
		}
		threads = max(threads, s.Threads)
	}
	return fmt.Sprintf("target timeline: %d samples over %.0fs (server.timeline); busiest second at %.0fs: %.1f cores, %s RSS, "+
		"%d fds; %d threads at most",
		len(tl), tl[len(tl)-1].AtS-tl[0].AtS, peak.AtS, peak.CPUCores, report.FmtBytes(peak.RSSBytes), peak.FDs, threads)
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
		fmt.Fprintf(w, "  finding %s (%s, %s): %s\n", f.Rule, f.Class, f.Severity, report.Ellipsis(f.Evidence, 300))
		if f.Rule == fanout.PerDeliveryRule {
			fmt.Fprintf(w, "    fix: %s\n", report.Ellipsis(f.Suggestion, 200))
		}
	}
	for i, u := range d.Unexplained {
		if i == 3 {
			break
		}
		fmt.Fprintf(w, "  CPU no finding explains: %s %.0f%%\n", u.Function, 100*u.CPUShare)
	}
	if d.Mix != nil {
		fmt.Fprintln(w, "alongside (--mix):")
		d.Mix.OperationsTable().Text(w)
	}
	report.ListWarnings(w, d.Warnings)
	report.ListThresholds(w, d.Thresholds)
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
	if t := d.experimentTable(); len(t.Rows) > 0 {
		b.WriteString("\n## Per-delivery experiment\n\n" + d.experimentLine() + ".\n\n")
		b.WriteString(t.Markdown())
	}
	if len(d.Findings) > 0 {
		b.WriteString("\n## Findings\n\n")
		for _, f := range d.Findings {
			fmt.Fprintf(&b, "- **%s** (%s, %s): %s\n  Fix: %s\n", f.Rule, f.Class, f.Severity, f.Evidence, f.Suggestion)
			if len(f.Frames) > 0 {
				fmt.Fprintf(&b, "  Stack: `%s`\n", strings.Join(f.Frames, "` ← `"))
			}
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
		b.WriteString(d.Mix.OperationsTable().Markdown())
	}
	report.WriteWarnings(&b, d.Warnings)
	report.WriteThresholds(&b, d.Thresholds)
	return b.String()
}

// HTML is report.html: the same, with the delivery latency curve.
func (d *WS) HTML() string {
	esc := html.EscapeString
	var b strings.Builder
	title := "ws against " + d.Target
	b.WriteString(report.PageHead("probe " + title))
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
		b.WriteString(report.LatencyCurve("delivery by percentile (ms)", d.latency))
	}
	if t := d.experimentTable(); len(t.Rows) > 0 {
		fmt.Fprintf(&b, "<h2>Per-delivery experiment</h2><p>%s.</p>%s", esc(d.experimentLine()), t.HTML())
	}
	if len(d.Findings) > 0 {
		b.WriteString("<h2>Findings</h2><ol>")
		for _, f := range d.Findings {
			fmt.Fprintf(&b, "<li><b>%s</b> (%s, %s): %s<br>Fix: %s", esc(f.Rule), esc(f.Class), esc(f.Severity), esc(f.Evidence), esc(f.Suggestion))
			if len(f.Frames) > 0 {
				fmt.Fprintf(&b, "<br>Stack: <code>%s</code>", esc(strings.Join(f.Frames, " ← ")))
			}
			b.WriteString("</li>")
		}
		b.WriteString("</ol>")
	}
	if d.Mix != nil {
		fmt.Fprintf(&b, "<h2>Alongside: %s (--mix)</h2>%s", esc(d.Mix.Microload), d.Mix.OperationsTable().HTML())
	}
	report.WriteWarningsHTML(&b, d.Warnings, 2)
	report.WriteThresholdsHTML(&b, d.Thresholds, 2)
	b.WriteString("</body></html>\n")
	return b.String()
}
