package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/probehq/probe/probes"
)

func grpcCommand(fs *flag.FlagSet) runner { return newLoadCommand(fs, "grpc") }

// grpcFlags say which unary or server-streaming method of a gRPC server
// to call, with what.
type grpcFlags struct {
	call, data, param string
	proto             []string     // .proto files, for a server without reflection
	headers           requestFlags // --header only
}

func (f *grpcFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.call, "call", "", "the unary or server-streaming method to load: package.Service/Method (the server's reflection, or --proto, describes it)")
	fs.StringVar(&f.data, "data", "{}", `the request message as JSON, e.g. {"id": "{id}"}; {name} is filled from --param`)
	fs.StringVar(&f.param, "param", "", "vary a {name} of --data: name=v1,v2,… (each request the next value; one request key each)")
	fs.Func("proto", "a .proto file that defines the method (repeatable; its folder is an import path), for a server without reflection", func(s string) error {
		f.proto = append(f.proto, s)
		return nil
	})
	fs.Func("header", "request metadata Name:value (repeatable), e.g. authorization:Bearer KEY", func(s string) error {
		f.headers.headers = append(f.headers.headers, s)
		return nil
	})
}

// Without --target probe starts the fixture, whose notes service
// (fixtures/notespb) is the default: its search, for words of the
// generated vault.
const (
	fixtureGRPCCall  = "probe.fixture.Notes/Search"
	fixtureGRPCData  = `{"query": "{q}"}`
	fixtureGRPCParam = "q=gzip,cache,kubernetes,certificate,sourdough"
)

// forFixture fills in the fixture's search when no --call is given and
// probe starts the fixture.
func (f *grpcFlags) forFixture(fixture bool) {
	if fixture && f.call == "" {
		f.call = fixtureGRPCCall
		if f.data == "{}" && f.param == "" {
			f.data, f.param = fixtureGRPCData, fixtureGRPCParam
		}
	}
}

// microload is the gRPC microload of the flags.
func (f *grpcFlags) microload() (*probes.GRPC, error) {
	if f.call == "" {
		return nil, usageError{"grpc: --call package.Service/Method is required with --target"}
	}
	if _, _, ok := probes.SplitGRPCMethod(f.call); !ok {
		return nil, usageError{fmt.Sprintf("--call %q: want package.Service/Method", f.call)}
	}
	l := &probes.GRPC{Method: f.call, Data: f.data, Proto: f.proto}
	var err error
	if l.Header, err = f.headers.headerFields(); err != nil {
		return nil, err
	}
	if f.param != "" {
		name, values, err := probes.ParseParam(f.param)
		if err != nil {
			return nil, usageError{"--param " + err.Error()}
		}
		if !strings.Contains(f.data, "{"+name+"}") {
			return nil, usageError{fmt.Sprintf("--param %s: --data has no {%s} to fill", name, name)}
		}
		l.Params = []probes.Param{{Name: name, Values: values}}
	}
	return l, nil
}
