package grpc

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bufbuild/protocompile"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/textline"
	"github.com/probehq/probe/probes"
)

// GRPC loads one unary or server-streaming method of a gRPC server: its
// request messages are written from JSON (Data, {name} holes filled from
// Params) against the method's descriptor, which the server's reflection
// service gives
// (grpc-go's client, once, in Prepare). The calls themselves are gRPC's
// wire format on probe's own HTTP/2 engine (lib/h2): POST
// /package.Service/Method, a length-prefixed message, the status in the
// trailers — so they get the same histograms, coordinated-omission
// correction, checks and reply evidence as every microload.
type GRPC struct {
	Method string // package.Service/Method
	Data   string // the request message as JSON; {name} is filled from Params
	Params []probes.Param
	Header []h1.Field
	// Proto are .proto files that define the method, for a server without
	// reflection; their folders are the import paths.
	Proto []string
	Label string // the microload's name (a target file's entry); empty: grpc
	// WatchAfter is how long the first stream of a server-streaming method
	// may stay open before probe takes it for a watch (0: 10 s); Say, when
	// set, is told at once that it was.
	WatchAfter time.Duration
	Say        func(line string)

	grpcMethod
	in       []grpcMessage
	counts   messageCounts // of a stream's calls
	verdicts streamVerdicts
	watch    *watchStream // the first stream outlived WatchAfter: each call is a span of the watch
}

type grpcMessage struct {
	key   string // the JSON the message was made of
	frame []byte // gRPC's length-prefixed message
}

// maxGRPCData bounds a request message's JSON.
const maxGRPCData = 1 << 20

func (l *GRPC) Name() string {
	if l.Label != "" {
		return l.Label
	}
	return "grpc"
}

func (l *GRPC) Prepare(ctx context.Context, t *probes.Target, c *probes.Client) error {
	m, err := resolveGRPCMethod(ctx, t, l.Method, l.Proto)
	if err != nil {
		return err
	}
	l.grpcMethod = m
	// The counts are kept over every Prepare of the load (a ramp's, the
	// run's, the experiment's): each checked call of the method counts.
	data := l.Data
	if data == "" {
		data = "{}"
	}
	datas, err := probes.ExpandData(data, l.Params)
	if err != nil {
		return err
	}
	l.in = l.in[:0]
	for _, d := range datas {
		if len(d) > maxGRPCData {
			return fmt.Errorf("--data is %d bytes; at most %d", len(d), maxGRPCData)
		}
		frame, err := l.request(d)
		if err != nil {
			return fmt.Errorf("--data %.200s %v", d, err)
		}
		l.in = append(l.in, grpcMessage{key: d, frame: frame})
	}
	if l.streaming {
		maxBody := h1.DefaultMaxBody
		if c != nil {
			maxBody = c.MaxBody()
		}
		return l.firstStream(ctx, t, maxBody)
	}
	return nil
}

// grpcFrame is a message as gRPC sends it: uncompressed, its length, its
// bytes.
func grpcFrame(msg []byte) []byte {
	out := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(out[1:5], uint32(len(msg)))
	copy(out[5:], msg)
	return out
}

func (l *GRPC) NewSession(ctx context.Context, c *probes.Client, id int) (probes.Session, error) {
	header := append(probes.GRPCHeader(), l.Header...)
	calls := make([]probes.Call, len(l.in))
	for i, m := range l.in {
		// A stream's every call is checked (Read), so that its messages are
		// counted call by call, not once per distinct reply.
		call := probes.Call{Op: "grpc " + strings.TrimPrefix(l.path, "/"), Key: m.key,
			Req: c.Target().Request("POST", l.path, m.frame, header...), Check: l.check, Read: l.streaming}
		if l.watch != nil {
			call.Do = l.watch.span(i)
		}
		calls[(i+max(id, 0))%len(calls)] = call
	}
	return probes.StaticSession(calls), nil
}

// check reads a reply as a gRPC client does (grpcMethod.check) and counts
// a stream's messages.
func (l *GRPC) check(r *probes.Reply) error {
	if !l.streaming {
		_, err := l.grpcMethod.check(r)
		return err
	}
	// Every call of a stream comes here (Read), to be counted; bytes
	// already checked keep their verdict, as the client's own cache does.
	n, err, ok := l.verdicts.get(r)
	if !ok {
		n, err = l.grpcMethod.check(r)
		l.verdicts.put(r, n, err)
	}
	if err == nil {
		l.counts.add(n)
	}
	return err
}

// grpcMethod is a method as the server (or the .proto files) describe it:
// what a call needs to write its request and read its reply.
type grpcMethod struct {
	path          string // /package.Service/Method
	input, output protoreflect.MessageDescriptor
	streaming     bool // a server stream: a reply is any number of messages
}

// resolveGRPCMethod finds method (package.Service/Method) through the
// server's reflection service, or in the .proto files when given.
func resolveGRPCMethod(ctx context.Context, t *probes.Target, method string, protoFiles []string) (grpcMethod, error) {
	svc, name, ok := probes.SplitGRPCMethod(method)
	if !ok {
		return grpcMethod{}, fmt.Errorf("method %q: want package.Service/Method", method)
	}
	if t.HTTP2 == nil {
		return grpcMethod{}, errors.New("gRPC runs over HTTP/2: the target needs --http2")
	}
	var md protoreflect.MethodDescriptor
	var err error
	if len(protoFiles) > 0 {
		md, err = protoMethod(ctx, protoFiles, svc, name)
	} else {
		md, err = reflectMethod(ctx, t, svc, name)
	}
	if err != nil {
		return grpcMethod{}, err
	}
	if md.IsStreamingClient() {
		return grpcMethod{}, fmt.Errorf("%s/%s takes a client stream; probe loads unary and server-streaming methods", svc, name)
	}
	return grpcMethod{path: "/" + svc + "/" + name, input: md.Input(), output: md.Output(), streaming: md.IsStreamingServer()}, nil
}

// maxShownName is how much of a name a server gave (a service, a method,
// a file) one line shows.
const maxShownName = 100

// request is the length-prefixed request message of data (JSON of the
// method's input type), or an error saying why data is not one.
func (m *grpcMethod) request(data string) ([]byte, error) {
	msg := dynamicpb.NewMessage(m.input)
	if err := protojson.Unmarshal([]byte(data), msg); err != nil {
		return nil, fmt.Errorf("is not a %s: %v", m.input.FullName(), err)
	}
	b, err := proto.Marshal(msg)
	if err != nil {
		return nil, err
	}
	return grpcFrame(b), nil
}

// check reads a reply as a gRPC client does: HTTP 200, a gRPC content
// type, grpc-status 0, and one whole message of the method's output type
// (any number of them for a stream), each decoded; n is their number.
func (m *grpcMethod) check(r *probes.Reply) (n int, err error) {
	if r.Status != 200 {
		return 0, fmt.Errorf("HTTP status %d", r.Status)
	}
	if ct := r.Header("Content-Type"); !strings.HasPrefix(ct, "application/grpc") {
		return 0, fmt.Errorf("content type %q, not gRPC", textline.Of(ct, 100))
	}
	switch st := r.Header("Grpc-Status"); st {
	case "0":
	case "":
		return 0, errors.New("no grpc-status in the reply")
	default:
		msg, _ := url.PathUnescape(r.Header("Grpc-Message"))
		return 0, fmt.Errorf("grpc-status %s: %s", textline.Of(st, 20), textline.Of(msg, 200))
	}
	if !m.streaming {
		b := r.Body
		if len(b) < 5 {
			return 0, fmt.Errorf("reply of %d bytes: no gRPC message", len(b))
		}
		if n := binary.BigEndian.Uint32(b[1:5]); int(n) != len(b)-5 {
			return 0, fmt.Errorf("a reply message of %d bytes in %d bytes after its prefix (one message expected)", n, len(b)-5)
		}
	}
	return m.decodeMessages(r.Body, nil)
}

// decodeMessages decodes each length-prefixed message of a reply as the
// method's output type, and counts them; each, when each is set.
func (m *grpcMethod) decodeMessages(b []byte, each func(*dynamicpb.Message) error) (int, error) {
	msg := dynamicpb.NewMessage(m.output)
	n := 0
	for len(b) > 0 {
		if len(b) < 5 {
			return n, fmt.Errorf("reply message %d: %d bytes, not a gRPC message prefix", n+1, len(b))
		}
		if b[0] != 0 {
			return n, errors.New("a compressed reply message, which probe did not ask for")
		}
		size := binary.BigEndian.Uint32(b[1:5])
		if uint64(size) > uint64(len(b)-5) {
			return n, fmt.Errorf("reply message %d: %d bytes announced, %d there", n+1, size, len(b)-5)
		}
		msg.Reset()
		if err := proto.Unmarshal(b[5:5+size], msg); err != nil {
			return n, fmt.Errorf("reply message %d is not a %s: %v", n+1, m.output.FullName(), err)
		}
		if each != nil {
			if err := each(msg); err != nil {
				return n, err
			}
		}
		b = b[5+size:]
		n++
	}
	return n, nil
}

// StreamNote says, for a server-streaming method, how many messages its
// calls got and what its latency measures; empty for a unary method or
// before any reply was checked.
func (l *GRPC) StreamNote() string {
	st := l.Stream()
	if st == nil || st.Calls == 0 {
		if st != nil && st.Watch {
			return st.WatchLine()
		}
		return ""
	}
	count := fmt.Sprintf("%d to %d messages a call, median %d, of %d checked calls", st.Fewest, st.Most, st.Median, st.Calls)
	if st.Fewest == st.Most {
		count = fmt.Sprintf("%d messages a call, every one of %d checked calls", st.Most, st.Calls)
	}
	if st.Watch {
		return st.WatchLine() + "; " + count + fmt.Sprintf(" (a call is %v of the watch)", st.Span)
	}
	return fmt.Sprintf("%s streams its reply: %s, every message of each distinct reply decoded, grpc-status 0 checked; "+
		"its latency is to the last message and the trailers", strings.TrimPrefix(l.path, "/"), count)
}

// dial is a grpc-go client of t (its reflection, a watch's first stream):
// h2c, or TLS for https (--insecure as the load's).
func dial(t *probes.Target) (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if t.URL.Scheme == "https" {
		creds = credentials.NewTLS(&tls.Config{ServerName: t.URL.Hostname(), InsecureSkipVerify: t.HTTP2.Insecure})
	}
	return grpc.NewClient(t.Addr(), grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
}

// reflectMethod asks the server's reflection service (grpc.reflection.v1)
// for the file that defines svc and the files it imports, and finds the
// method there. A server without reflection, an unknown service or
// method: one error naming what the server has.
func reflectMethod(ctx context.Context, t *probes.Target, svc, method string) (protoreflect.MethodDescriptor, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := dial(t)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stream, err := rpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, fmt.Errorf("the server's reflection service: %s", textline.Of(err.Error(), textline.Max))
	}
	defer stream.CloseSend()
	ask := func(req *rpb.ServerReflectionRequest) (*rpb.ServerReflectionResponse, error) {
		// A server without reflection ends the stream at once: Send may then
		// see only io.EOF, and Recv has the status that says why.
		sendErr := stream.Send(req)
		resp, err := stream.Recv()
		if err == nil && sendErr != nil {
			err = sendErr
		}
		if status.Code(err) == codes.Unimplemented {
			return nil, errors.New("the server has no reflection service (grpc.reflection.v1): " +
				"give the method's .proto files with --proto, or register reflection on the server (reflection.Register)")
		}
		if err != nil {
			return nil, fmt.Errorf("the server's reflection service (grpc.reflection.v1; or give --proto files): %s",
				textline.Of(err.Error(), textline.Max))
		}
		if e := resp.GetErrorResponse(); e != nil {
			return resp, fmt.Errorf("reflection: %s", textline.Of(e.GetErrorMessage(), textline.Max))
		}
		return resp, nil
	}
	resp, err := ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: svc}})
	if err != nil {
		if resp != nil { // the service is unknown: name those it has
			if have, lerr := ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_ListServices{ListServices: ""}}); lerr == nil {
				var names []string
				for _, s := range have.GetListServicesResponse().GetService() {
					names = append(names, s.GetName())
				}
				sort.Strings(names)
				return nil, fmt.Errorf("the server has no service %s; it has %s", svc, textline.Names(names, maxShownName))
			}
		}
		return nil, err
	}
	files := map[string]*descriptorpb.FileDescriptorProto{}
	var pending []string
	add := func(r *rpb.ServerReflectionResponse) error {
		for _, raw := range r.GetFileDescriptorResponse().GetFileDescriptorProto() {
			fd := &descriptorpb.FileDescriptorProto{}
			if err := proto.Unmarshal(raw, fd); err != nil {
				return fmt.Errorf("reflection sent a file descriptor that does not decode: %s",
					textline.Of(err.Error(), textline.Max))
			}
			if _, ok := files[fd.GetName()]; !ok {
				files[fd.GetName()] = fd
				pending = append(pending, fd.GetDependency()...)
			}
		}
		return nil
	}
	if err := add(resp); err != nil {
		return nil, err
	}
	for len(pending) > 0 && len(files) < 1000 {
		name := pending[0]
		pending = pending[1:]
		if _, ok := files[name]; ok {
			continue
		}
		r, err := ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileByFilename{FileByFilename: name}})
		if err != nil {
			return nil, fmt.Errorf("%s imports %s: %v", svc, textline.Of(name, maxShownName), err)
		}
		if err := add(r); err != nil {
			return nil, err
		}
	}
	set := &descriptorpb.FileDescriptorSet{}
	for _, fd := range files {
		set.File = append(set.File, fd)
	}
	reg, err := protodesc.NewFiles(set)
	if err != nil {
		return nil, fmt.Errorf("the server's descriptors of %s: %s", svc, textline.Of(err.Error(), textline.Max))
	}
	d, err := reg.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, fmt.Errorf("the server has no service %s: %s", svc, textline.Of(err.Error(), textline.Max))
	}
	return findMethod(d, svc, method)
}

// protoMethod compiles .proto files (bufbuild/protocompile; the standard
// imports built in) and finds the method there.
func protoMethod(ctx context.Context, files []string, svc, method string) (protoreflect.MethodDescriptor, error) {
	var dirs, names []string
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("--proto %s: %v", f, err)
		}
		if d := filepath.Dir(f); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
		names = append(names, filepath.Base(f))
	}
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: dirs})}
	compiled, err := c.Compile(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("--proto: %v", err)
	}
	d, err := compiled.AsResolver().FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		var have []string
		for _, f := range compiled {
			for i := range f.Services().Len() {
				have = append(have, string(f.Services().Get(i).FullName()))
			}
		}
		sort.Strings(have)
		return nil, fmt.Errorf("the --proto files define no service %s; they define %s",
			svc, textline.Names(have, maxShownName))
	}
	return findMethod(d, svc, method)
}

// findMethod is method of service descriptor d, or an error naming the
// methods it has.
func findMethod(d protoreflect.Descriptor, svc, method string) (protoreflect.MethodDescriptor, error) {
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s is not a service", svc)
	}
	md := sd.Methods().ByName(protoreflect.Name(method))
	if md == nil {
		var names []string
		for i := range sd.Methods().Len() {
			names = append(names, string(sd.Methods().Get(i).Name()))
		}
		return nil, fmt.Errorf("service %s has no method %s; it has %s", svc, method, textline.Names(names, maxShownName))
	}
	return md, nil
}
