package sessions

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/probehq/probe/fixtures"
	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/lib/textline"
	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/ws"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/wsreport"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/thresholds"
)

// wsCommand is `probe ws`: WebSocket fan-out with delivery checks (seed
// 004). Every event is checked at every connection of its room: missing,
// duplicated, misrouted and out of order, and timed from publish to
// receipt; any missing, duplicated or misrouted event, refused publish or
// refused upgrade exits 1.
type WS struct {
	target  shared.TargetFlags
	profile shared.ProfileFlags
	output  shared.OutputFlags
	load    shared.LoadFlags // the --mix microload's

	connections, rooms, events, rounds int
	drop, idleRound, sourceAddrs       int
	connectRate                        float64
	pause, idle, deliverTimeout        time.Duration
	readyTimeout                       time.Duration
	path, token, auth, hello, ready    string
	publish, publishPath, publishBody  string
	publishMethod                      string
	experimentRoom                     string   // the per-delivery experiment's empty room, when rooms are provisioned
	roomNames                          []string // the target file's rooms, unless --rooms is given
	fs                                 *flag.FlagSet
	replays                            bool
	readLimit                          shared.ByteSize
	mix                                string
	headers                            []string
}

func WSCommand(fs *flag.FlagSet) shared.Runner { return NewWS(fs).run }

// NewWS registers probe ws's flags on fs.
func NewWS(fs *flag.FlagSet) *WS {
	c := &WS{fs: fs}
	c.target.Register(fs, shared.TargetOptions{})
	fs.IntVar(&c.connections, "connections", 1000, "WebSocket connections, each authenticated and subscribed to one room")
	fs.IntVar(&c.rooms, "rooms", 10, "rooms: connection i joins room i mod R (named r0, r1, …; default the target file's "+
		"ws.rooms, by their names)")
	fs.Float64Var(&c.connectRate, "connect-rate", 2000, "upgrades started a second")
	fs.IntVar(&c.events, "events", 10, "events published to each room in each round")
	fs.IntVar(&c.rounds, "rounds", 3, "rounds of events")
	fs.DurationVar(&c.pause, "pause", 2*time.Second, "between rounds (profiled: the length of each round's CPU profile)")
	fs.DurationVar(&c.idle, "idle", 0, "a quiet wait before one round (--idle-round), as idle connections meet timeouts and keep-alives")
	fs.IntVar(&c.idleRound, "idle-round", 0, "the round --idle comes before (default: the middle one)")
	fs.IntVar(&c.drop, "drop", 0, "close this many connections abruptly before the middle round, publish it while they are away, "+
		"reconnect them: the rounds after must all arrive")
	fs.BoolVar(&c.replays, "replays", false, "the server claims to replay what a reconnected connection missed: the report "+
		"says whether it did")
	fs.StringVar(&c.path, "ws-path", "/ws?room={room}", "where a connection upgrades ({room}, {token})")
	fs.StringVar(&c.token, "token", "", "the token each connection authenticates with (default: --key; the fixture's key "+
		"when probe starts it)")
	fs.StringVar(&c.auth, "auth", "query", "how the token is sent: header (Authorization: Bearer), query (token= or {token} in "+
		"--ws-path), message (--hello first), none")
	fs.StringVar(&c.hello, "hello", "", `the first message of each connection ({token}, {room}), e.g. {"token":"{token}","join":"{room}"}`)
	fs.StringVar(&c.ready, "ready", `"type":"ready"`, `what a message says when the server has subscribed a connection; "" `+
		`takes the upgrade for it`)
	fs.StringVar(&c.publish, "publish", "http", "how events are published: http (a request to --publish-path) or ws (a message "+
		"on a connection to --publish-path)")
	fs.StringVar(&c.publishPath, "publish-path", "/ws/publish", "where events are published (http: {room} and {event} are filled in)")
	fs.StringVar(&c.publishMethod, "publish-method", "POST", "the HTTP publish's method: POST, PUT (a note's write, say) or PATCH")
	fs.StringVar(&c.publishBody, "publish-body", `{"room":"{room}","data":"{event}"}`, "the body or message of an event ({room}, "+
		"{event}: probe's marker, found in whatever arrives)")
	fs.StringVar(&c.experimentRoom, "experiment-room", "", "the per-delivery experiment's empty room, for servers whose rooms "+
		"must be provisioned: "+
		"a room you guarantee no connection joins (probe still checks that none of its events arrive); default a fresh probe-experiment-N")
	fs.DurationVar(&c.deliverTimeout, "deliver-timeout", 10*time.Second, "how long after a round's last publish an event may "+
		"arrive before it counts as missing")
	fs.DurationVar(&c.readyTimeout, "ready-timeout", 2*time.Minute, "how long a connection may take from its upgrade to --ready")
	c.readLimit = 64 << 10
	fs.Var(&c.readLimit, "read-limit", "the largest message a connection reads (a larger one closes it, as a server sending garbage)")
	fs.IntVar(&c.sourceAddrs, "source-addrs", 4, "loopback source addresses (127.0.0.1, .2, …) the connections are spread "+
		"over, so one address's ephemeral ports do not run out")
	fs.Func("header", "a header Name:value with every upgrade and publish (repeatable), e.g. 'X-API-Key: …' for the "+
		"server's publish API", func(v string) error {
		if _, err := probes.ParseHeader(v); err != nil {
			return fmt.Errorf("--header %v", err)
		}
		c.headers = append(c.headers, v)
		return nil
	})
	fs.StringVar(&c.mix, "mix", "", "a microload (page, search, …) run alongside over HTTP once the connections are ready, "+
		"with its own table (--duration, --concurrency)")
	c.load.Register(fs, shared.LoadDefaults{Duration: 10 * time.Second, Timeout: 30 * time.Second, Concurrency: 8,
		DurationHelp: "with --mix: its measured time"})
	c.profile.Register(fs, shared.ProfileOptions{
		Help: "profile the target while it fans out: a CPU profile of each round, the mutex profile of the " +
			"run, the analyzers on them, " +
			"and the per-delivery experiment after the rounds (--experiment=false: none)"})
	c.output.Register(fs, "ws")
	c.output.RegisterGates(fs, "p95_ms>500 (delivery), errors>0 (missing, duplicated or misrouted), target_rss_mb>2000, finding:contention")
	return c
}

// options are the fan-out's options of the flags, checked.
func (c *WS) Options() (ws.Options, error) {
	o := ws.Options{Path: c.path, Token: c.token, Auth: c.auth, Hello: c.hello, Ready: c.ready,
		Connections: c.connections, Rooms: c.rooms, RoomNames: c.roomNames, ConnectRate: c.connectRate, Events: c.events, Rounds: c.rounds,
		Pause: c.pause, Idle: c.idle, IdleBefore: c.idleRound, Drop: c.drop,
		Publish: c.publish, PublishPath: c.publishPath, PublishBody: c.publishBody, PublishMethod: strings.ToUpper(c.publishMethod),
		ExperimentRoom: c.experimentRoom,
		DeliverTimeout: c.deliverTimeout, ReadyTimeout: c.readyTimeout, ReadLimit: int64(c.readLimit), SourceAddrs: c.sourceAddrs}
	if o.Token == "" {
		o.Token = c.target.Key
		if o.Token == "" && c.target.Target == "" {
			o.Token = fixtures.DefaultKey
		}
	}
	if o.IdleBefore == 0 {
		o.IdleBefore = o.Rounds/2 + 1
	}
	o.Base = &url.URL{Scheme: "http", Host: "127.0.0.1:1"} // its numbers are checked here; the target comes later
	err := o.Validate()
	switch {
	case err != nil:
		return o, shared.UsageError{Msg: err.Error()}
	case c.deliverTimeout <= 0 || c.deliverTimeout > time.Hour || c.readyTimeout <= 0 || c.readyTimeout > time.Hour:
		return o, shared.UsageError{Msg: "--deliver-timeout and --ready-timeout: want more than 0 and at most 1h"}
	case c.readLimit < 1<<10 || c.readLimit > 64<<20:
		return o, shared.UsageError{Msg: fmt.Sprintf("--read-limit %v: want 1 KiB to 64 MiB", c.readLimit)}
	case c.sourceAddrs < 1 || c.sourceAddrs > 250:
		return o, shared.UsageError{Msg: fmt.Sprintf("--source-addrs %d: want 1 to 250", c.sourceAddrs)}
	case c.auth != "none" && o.Token == "":
		return o, shared.UsageError{Msg: "--auth " + c.auth + " needs --token (or --key): or --auth none"}
	}
	return o, nil
}

// fromFile takes the target file's ws settings for the flags not given.
func (c *WS) FromFile(file *shared.TargetFile) error {
	if file == nil || file.WS == nil {
		return nil
	}
	x := file.WS
	given := map[string]bool{}
	c.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, f := range []struct {
		flag string
		to   *string
		from string
	}{{"ws-path", &c.path, x.Path}, {"auth", &c.auth, x.Auth}, {"token", &c.token, x.Token}, {"hello", &c.hello, x.Hello},
		{"publish", &c.publish, x.Publish}, {"publish-path", &c.publishPath, x.PublishPath},
		{"publish-body", &c.publishBody, x.PublishBody}, {"publish-method", &c.publishMethod, x.PublishMethod}} {
		if !given[f.flag] && f.from != "" {
			*f.to = f.from
		}
	}
	if !given["ready"] && x.Ready != nil {
		c.ready = *x.Ready
	}
	if !given["token"] && x.TokenEnv != "" {
		if c.token = os.Getenv(x.TokenEnv); c.token == "" {
			return shared.UsageError{Msg: fmt.Sprintf("--file %s: ws.tokenEnv: $%s is empty or not set", file.Path, x.TokenEnv)}
		}
	}
	if !given["rooms"] && len(x.Rooms) > 0 {
		c.roomNames, c.rooms = x.Rooms, len(x.Rooms)
	}
	return nil
}

func (c *WS) run(ctx context.Context, s shared.Streams, words []string) error {
	if err := shared.NoWords("ws", words); err != nil {
		return err
	}
	var o ws.Options
	var mixLoad probes.Microload
	var file *shared.TargetFile
	sess, err := shared.Begin(ctx, s, shared.Start{
		Checks: []error{c.target.Validate(), c.profile.Validate(), c.load.Validate()},
		Gates:  "run",
		Before: func() (err error) {
			if file, err = shared.ReadFileFlag(ctx, &c.target, &c.profile); err != nil {
				return err
			}
			if err = c.FromFile(file); err != nil {
				return err
			}
			if o, err = c.Options(); err != nil {
				return err
			}
			if c.mix != "" {
				mixLoad, err = shared.NamedMicroload(c.mix, c.target.Target == "")
			}
			return err
		},
		Output: &c.output, Profile: &c.profile,
	})
	if err != nil {
		return err
	}
	// Each connection is a descriptor here (and one in the target, which
	// a started fixture inherits from this limit).
	limit, err := ws.FDLimit(uint64(c.connections + 256))
	if err != nil {
		return fmt.Errorf("%d connections: %v", c.connections, err)
	}
	tg, warnings, cleanup, err := shared.OpenTarget(ctx, &c.target, file, s.Stderr)
	if err != nil {
		return err
	}
	defer cleanup()
	o.Base = tg.URL
	o.Header = http.Header{}
	for _, h := range tg.Header {
		if c.auth == "header" && strings.EqualFold(h.Name, "Authorization") {
			continue // the token's header
		}
		o.Header.Add(h.Name, h.Value)
	}
	for _, v := range c.headers {
		h, _ := probes.ParseHeader(v) // checked as the flag was read
		o.Header.Add(h.Name, h.Value)
	}
	profile := c.profile.Options(tg.URL, c.pause)
	server := shared.OpenServer(ctx, tg, profile, "no memory, descriptors or CPU of it", "the deliveries are still checked")
	warnings = append(warnings, server.Warnings...)
	pid := server.PID
	o.PID = pid
	if o.RoomlessPublish() {
		warnings = append(warnings, RoomlessWarning(o))
	}
	if server.Pprof != nil {
		o.Profile = &ws.Profile{PprofURL: profile.PprofURL, FgprofURL: profile.FgprofURL, MaxProfile: profile.MaxProfile}
	}
	progress := shared.NewProgressLine(s.Stderr)
	o.Progress = func(line string) { progress.Show("ws: " + line) }
	po := pipeline.WSOptions{Load: o, Target: tg.URL.String(), PID: pid, Rules: sess.Rules, NoExperiment: !c.profile.Experiment,
		Config: wsreport.WSConfig{Connections: o.Connections, Rooms: o.Rooms, Events: o.Events, Rounds: o.Rounds, PauseS: o.Pause.Seconds(),
			IdleS: o.Idle.Seconds(), Drop: o.Drop, ConnectRate: o.ConnectRate, Auth: o.Auth, Publish: o.Publish,
			DeliverTimeoutS: o.DeliverTimeout.Seconds(), ReplayClaimed: c.replays, FDLimit: limit, SourceAddrs: o.SourceAddrs}}
	if c.target.Target == "" {
		po.Mode = c.target.FixtureMode
	}
	if mixLoad != nil {
		lo := c.load.Options()
		po.Mix = func(ctx context.Context) (*report.Run, error) {
			rep, _, err := shared.PipelineOf(sess.Rules, nil).Measure(ctx, "mix "+c.mix, mixLoad, tg, lo)
			return rep, err
		}
	}
	fmt.Fprintf(s.Stderr, "probe: %d WebSocket connections to %s, %d rooms, %d rounds of %d events a room…\n",
		o.Connections, tg.URL, o.Rooms, o.Rounds, o.Events)
	doc, err := pipeline.WS(ctx, po)
	progress.Clear()
	if err != nil {
		var re *ws.RefusedError
		if errors.As(err, &re) || ctx.Err() == nil {
			return fmt.Errorf("target %s: %v", tg.URL, err)
		}
		return err
	}
	doc.Warnings = append(warnings, doc.Warnings...)
	figures := []thresholds.RunFigures{wsFigures(doc)}
	if doc.Mix != nil {
		figures = append(figures, shared.RunFigures(doc.Mix))
	}
	verdicts, lines := thresholds.JudgeRuns(sess.Gates, figures)
	doc.Thresholds = shared.ReportThresholds(verdicts)
	sess.Broken = append(sess.Broken, lines...)
	var failure error
	if doc.Failed() {
		failure = fmt.Errorf("%s; see %s", doc.Verdict, filepath.Join(sess.Dir, "report.md"))
	}
	return sess.Finish(doc, failure)
}

// roomlessWarning says that every room gets the same publishes: neither
// the publish path nor its body names the room.
func RoomlessWarning(o ws.Options) result.Warning {
	rooms := "every publish goes to the same place"
	if o.Rooms > 1 {
		rooms = fmt.Sprintf("the %d rooms are one, and their events reach other rooms' connections (misrouted)", o.Rooms)
	}
	return result.Warning{Kind: "publish-without-room", Message: fmt.Sprintf("neither --publish-path (%s) nor "+
		"--publish-body holds {room}: "+
		"%s; the per-delivery experiment's empty room is not empty (it voids itself when its events arrive): "+
		"put {room} where the server reads the room", textline.Of(o.PublishPath, 80), rooms)}
}

// wsFigures are what --fail-on reads of a fan-out: the delivery latency
// as a run's, deliveries as its requests, and the wrong ones as errors.
func wsFigures(d *wsreport.WS) thresholds.RunFigures {
	t := d.Totals
	wrong := t.Missing + t.Duplicated + t.Misrouted
	f := thresholds.RunFigures{Microload: "ws", Requests: t.Expected, Errors: wrong, Values: map[string]float64{
		"p50_ms": d.Delivery.P50, "p95_ms": d.Delivery.P95, "p99_ms": d.Delivery.P99, "max_ms": d.Delivery.Max,
		"requests": float64(t.Expected), "errors": 0,
	}}
	if t.Expected > 0 {
		f.Values["errors"] = float64(wrong) / float64(t.Expected)
	}
	if d.Server.PID > 0 {
		f.Values["target_rss_mb"] = float64(d.Server.RSSPeakBytes) / (1 << 20)
	}
	for _, x := range d.Findings {
		f.Findings = append(f.Findings, thresholds.Finding{Rule: x.Rule, Class: x.Class, Endpoint: x.Endpoint,
			CPUShare: max(x.CPUShare, x.WaitShare)})
	}
	return f
}
