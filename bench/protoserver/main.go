// Command protoserver is the target of bench/protocols.sh: the same
// 100-byte reply as bench/trivialserver over HTTP/2 without TLS (h2c, prior
// knowledge), and grpc-go's health service with reflection on a second
// port, so that only the load generator's cost varies. The same port serves
// grpc-go's interop TestService (its generated code; grpc-go's own
// implementation drags xDS into the module), whose StreamingOutputCall
// streams the messages a request asks for at the intervals it asks
// (bench/streams.sh).
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/reflection"
)

func main() {
	h2l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	body := []byte(strings.Repeat("x", 99) + "\n")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(body)
	})}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetUnencryptedHTTP2(true)
	g := grpc.NewServer()
	healthpb.RegisterHealthServer(g, health.NewServer())
	testgrpc.RegisterTestServiceServer(g, streamer{})
	reflection.Register(g)
	fmt.Printf("h2c on http://%s\ngrpc on %s\n", h2l.Addr(), gl.Addr())
	go g.Serve(gl)
	srv.Serve(h2l)
}

// streamer answers StreamingOutputCall as grpc-go's interop server does:
// a message per response parameter, each after its interval.
type streamer struct {
	testgrpc.UnimplementedTestServiceServer
}

func (streamer) StreamingOutputCall(in *testgrpc.StreamingOutputCallRequest,
	stream testgrpc.TestService_StreamingOutputCallServer) error {
	for _, p := range in.GetResponseParameters() {
		time.Sleep(time.Duration(p.GetIntervalUs()) * time.Microsecond)
		body := make([]byte, max(p.GetSize(), 0))
		if err := stream.Send(&testgrpc.StreamingOutputCallResponse{Payload: &testgrpc.Payload{Body: body}}); err != nil {
			return err
		}
	}
	return nil
}
