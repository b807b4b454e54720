package loads

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/grpc"
	"github.com/probehq/probe/report"
)

func GRPCCommand(fs *flag.FlagSet) shared.Runner { return NewLoadCommand(fs, "grpc") }

// grpcFlags say which unary or server-streaming method of a gRPC server
// to call, with what.
type grpcFlags struct {
	call, data, param string
	proto             []string            // .proto files, for a server without reflection
	headers           shared.RequestFlags // --header only
}

func (f *grpcFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.call, "call", "", "the unary or server-streaming method to load: package.Service/Method (the server's "+
		"reflection, or --proto, describes it)")
	fs.StringVar(&f.data, "data", "{}", `the request message as JSON, e.g. {"id": "{id}"}; {name} is filled from --param`)
	fs.StringVar(&f.param, "param", "", "vary a {name} of --data: name=v1,v2,… (each request the next value; one request key each)")
	fs.Func("proto", "a .proto file that defines the method (repeatable; its folder is an import path), for a server without reflection", func(s string) error {
		f.proto = append(f.proto, s)
		return nil
	})
	fs.Func("header", "request metadata Name:value (repeatable), e.g. authorization:Bearer KEY", func(s string) error {
		f.headers.Headers = append(f.headers.Headers, s)
		return nil
	})
}

// Without --target probe starts the fixture, whose notes service
// (fixtures/notespb) is the default: its search, for words of the
// generated vault.
const (
	FixtureGRPCCall  = "probe.fixture.Notes/Search"
	fixtureGRPCData  = `{"query": "{q}"}`
	fixtureGRPCParam = "q=gzip,cache,kubernetes,certificate,sourdough"
)

// forFixture fills in the fixture's search when no --call is given and
// probe starts the fixture.
func (f *grpcFlags) forFixture(fixture bool) {
	if fixture && f.call == "" {
		f.call = FixtureGRPCCall
		if f.data == "{}" && f.param == "" {
			f.data, f.param = fixtureGRPCData, fixtureGRPCParam
		}
	}
}

// microload is the gRPC microload of the flags.
func (f *grpcFlags) microload() (*grpc.GRPC, error) {
	if f.call == "" {
		return nil, shared.UsageError{Msg: "grpc: --call package.Service/Method is required with --target"}
	}
	if _, _, ok := probes.SplitGRPCMethod(f.call); !ok {
		return nil, shared.UsageError{Msg: fmt.Sprintf("--call %q: want package.Service/Method", f.call)}
	}
	l := &grpc.GRPC{Method: f.call, Data: f.data, Proto: f.proto}
	var err error
	if l.Header, err = f.headers.HeaderFields(); err != nil {
		return nil, err
	}
	if f.param != "" {
		name, values, err := probes.ParseParam(f.param)
		if err != nil {
			return nil, shared.UsageError{Msg: "--param " + err.Error()}
		}
		if !strings.Contains(f.data, "{"+name+"}") {
			return nil, shared.UsageError{Msg: fmt.Sprintf("--param %s: --data has no {%s} to fill", name, name)}
		}
		l.Params = []probes.Param{{Name: name, Values: values}}
	}
	return l, nil
}

// watchFor tells a gRPC microload how long its first stream may stay open
// before it is a watch (--timeout, or the profile's window when shorter),
// and has it say so on stderr at once.
func watchFor(ml probes.Microload, o probes.LoadOptions, stderr io.Writer) {
	g, ok := ml.(*grpc.GRPC)
	if !ok {
		return
	}
	g.WatchAfter = o.Timeout
	if o.Profile != nil && o.Profile.Window > 0 && (g.WatchAfter <= 0 || o.Profile.Window < g.WatchAfter) {
		g.WatchAfter = o.Profile.Window
	}
	g.Say = func(line string) { fmt.Fprintf(stderr, "probe: %s\n", line) }
}

// streamReport puts what the run measured of a server-streaming method
// into rep: report.json's stream, the grpc-stream note, and a grpc-watch
// warning for a stream that does not end within the call.
func streamReport(rep *report.Run, ml probes.Microload) {
	g, ok := ml.(*grpc.GRPC)
	if !ok {
		return
	}
	st := g.Stream()
	if st == nil {
		return
	}
	out := &report.Stream{Method: st.Method, Calls: st.Calls,
		Messages: report.StreamMessages{Fewest: st.Fewest, Median: st.Median, Most: st.Most, Total: st.Messages}}
	if st.Watch {
		w := &report.Watch{After: st.WatchAfter.Seconds(), Span: st.Span.Seconds(),
			FirstStreamMessages: st.FirstStreamMsgs, MessagesPerSecond: st.MessagesPerSecond(),
			CallsWithoutMessage: st.SpansWithoutMessage}
		w.FirstMessageMS = msOrNull(st.FirstMessage)
		w.CallsFirstMessageMedianMS, w.CallsFirstMessageMaxMS = msOrNull(st.SpanFirstMedian), msOrNull(st.SpanFirstSlowest)
		out.Watch = w
		rep.Warn("grpc-watch", st.WatchLine())
	}
	rep.Stream = out
	if note := g.StreamNote(); note != "" && !st.Watch {
		rep.Warn("grpc-stream", note)
	} else if st.Watch && st.Calls > 0 {
		rep.Warn("grpc-stream", fmt.Sprintf("%s: %d to %d messages a call, median %d, of %d checked calls (each call holds the watch %v)",
			st.Method, st.Fewest, st.Most, st.Median, st.Calls, st.Span))
	}
}

// msOrNull is d in milliseconds, or nil (null in report.json) when d < 0:
// nothing was measured.
func msOrNull(d time.Duration) *float64 {
	if d < 0 {
		return nil
	}
	ms := float64(d.Microseconds()) / 1000
	return &ms
}
