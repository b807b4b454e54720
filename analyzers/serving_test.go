package analyzers

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// primeArgs are the arguments of the test's CPU-heavy MCP tool.
type primeArgs struct {
	N int `json:"n"`
}

// countPrimes is the tool's own work: trial division up to n, on the
// SDK's handler goroutine.
func countPrimes(ctx context.Context, req *mcp.CallToolRequest, a primeArgs) (*mcp.CallToolResult, any, error) {
	n := 0
	for i := 2; i < a.N; i++ {
		prime := true
		for d := 2; d*d <= i; d++ {
			if i%d == 0 {
				prime = false
				break
			}
		}
		if prime {
			n++
		}
	}
	// A tool's result is often kilobytes: the count, then the primes' table.
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(n)},
		&mcp.TextContent{Text: strings.Repeat("prime table row\n", 1000)}}}, nil, nil
}

// mcpServer is an MCP server on the official SDK over streamable HTTP,
// with one CPU-heavy tool.
func mcpServer() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "primes", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "primes", Description: "count primes below n"}, countPrimes)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

// mcpCall posts one JSON-RPC message to an MCP endpoint with the session
// id sid ("" before initialize) and returns the reply and the session id.
func mcpCall(url, sid, body string) (string, string, error) {
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return "", "", fmt.Errorf("%s: %s", resp.Status, b)
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		sid = s
	}
	return string(b), sid, nil
}

// loadMCP calls the tool from two clients (plain HTTP, so that no SDK
// client shares the profile) for d and returns the CPU profile.
func loadMCP(t *testing.T, d time.Duration) *profile.Profile {
	t.Helper()
	srv := httptest.NewServer(mcpServer())
	defer srv.Close()
	return profileWhile(t, d, 2, func(done func() bool) {
		_, sid, err := mcpCall(srv.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		if err != nil {
			t.Error(err)
			return
		}
		if _, _, err := mcpCall(srv.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
			t.Error(err)
			return
		}
		for id := 2; !done(); id++ {
			reply, _, err := mcpCall(srv.URL, sid,
				fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"primes","arguments":{"n":30000}}}`, id))
			if err != nil || !strings.Contains(reply, "3245") {
				t.Errorf("tools/call: %v %q", err, reply)
				return
			}
		}
	})
}

// spin is a goroutine of the target's own that serves no request: a
// ticker's work, burning CPU until stop is closed.
func spin(stop <-chan struct{}) {
	x := 1
	for {
		select {
		case <-stop:
			return
		default:
		}
		for i := 0; i < 1e5; i++ {
			x = x*31 + i
		}
		sink.Store(int64(x))
		time.Sleep(time.Millisecond)
	}
}

var sink atomic.Int64

// profileClients profiles the process while the target's own ticker
// (spin) runs and n clients, each made by newClient, call until one says
// stop (nil: none made): for at least 2 s and a second of CPU, at most 12 s.
func profileClients(t *testing.T, n int, newClient func() (call func() bool)) *profile.Profile {
	t.Helper()
	stop := make(chan struct{})
	go spin(stop)
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skipf("CPU profile: %v", err)
	}
	start, cpu0 := time.Now(), processCPU()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			call := newClient()
			for since := time.Duration(0); call != nil && (since < 2*time.Second || processCPU()-cpu0 < time.Second && since < 12*time.Second); since = time.Since(start) {
				if !call() {
					return
				}
			}
		})
	}
	wg.Wait()
	pprof.StopCPUProfile()
	close(stop)
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// cpuUnder is the CPU of p's samples with a frame re matches, in seconds.
func cpuUnder(p *profile.Profile, re string) float64 {
	q := p.Copy()
	q.FilterSamplesByName(regexp.MustCompile(re), nil, nil, nil)
	var v int64
	for _, s := range q.Sample {
		v += s.Value[1]
	}
	return float64(v) / 1e9
}

// The official MCP SDK runs a tool call on a goroutine of its own
// (jsonrpc2's handleAsync), not under net/http's conn.serve: the CPU
// serving requests holds it, and a goroutine of the target's own that
// serves no request is background, shown apart.
func TestServingCPUHoldsTheMCPSDKsHandlers(t *testing.T) {
	stop := make(chan struct{})
	go spin(stop)
	before := heapProfile(t)
	p := loadMCP(t, 2*time.Second)
	allocs := heapDelta(t, before, heapProfile(t))
	close(stop)
	res := Analyze(p, nil, Evidence{Endpoint: "tools/call primes"}, DefaultRules())
	c := res.CPU
	t.Logf("CPU split: %+v", c)
	tool := cpuUnder(p, `countPrimes`)
	conn := cpuUnder(p, `^net/http\.\(\*conn\)\.serve$`)
	background := cpuUnder(p, `analyzers\.spin$`)
	if tool < 0.3 {
		t.Skipf("the tool took %.2f s of CPU: too few samples on this machine", tool)
	}
	if c.Serving < tool+0.9*conn {
		t.Errorf("serving %.2f s, but the tool's handler goroutines took %.2f s and conn.serve %.2f s", c.Serving, tool, conn)
	}
	if c.Background < 0.9*background {
		t.Errorf("background %.2f s, but the own ticker goroutine took %.2f s", c.Background, background)
	}
	if c.Serving+c.Background+c.GC+c.Idle+c.Runtime > c.Total+1e-6 || c.Serving > c.Total-0.9*background {
		t.Errorf("the split does not add up: %+v (ticker %.2f s)", c, background)
	}
	// An example server inside the SDK's own module (as shipped) makes the
	// SDK the target's own code: its handler goroutines still serve, by
	// the replies they write.
	// The writes show in the allocation profile when no CPU sample caught
	// one (probe fetches both).
	own := Analyze(p, allocs, Evidence{Endpoint: "tools/call primes", MainModule: "github.com/modelcontextprotocol/go-sdk"},
		DefaultRules()).CPU
	sdk := cpuUnder(p, `jsonrpc2\.\(\*Connection\)\.(handleAsync|readIncoming)|^net/http\.\(\*conn\)\.serve$`)
	if own.Serving < 0.98*sdk {
		t.Errorf("the SDK as the target's own module: serving %.2f s, but its goroutines (reader, dispatcher, handlers) and "+
			"conn.serve took %.2f s", own.Serving, sdk)
	}
	if own.Serving < tool+0.9*conn {
		t.Errorf("the SDK as the target's own module: serving %.2f s, but its handler goroutines took %.2f s and conn.serve %.2f s",
			own.Serving, tool, conn)
	}
}

// grpcCount is a unary gRPC method of the target's own: it counts primes
// below the request's value.
func grpcCount(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
	in := new(wrapperspb.Int64Value)
	if err := dec(in); err != nil {
		return nil, err
	}
	r, _, _ := countPrimes(ctx, nil, primeArgs{N: int(in.Value)})
	return wrapperspb.String(r.Content[0].(*mcp.TextContent).Text), nil
}

var primesService = grpc.ServiceDesc{ServiceName: "t.Primes", HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Count", Handler: grpcCount}}}

// grpc-go serves a call on goroutines of its own: the stream's handler
// (handleStream), the transport's reader and its writer (loopy). All of
// them serve; the test's own ticker does not.
func TestServingCPUHoldsGRPCsGoroutines(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	gs.RegisterService(&primesService, nil)
	go gs.Serve(lis)
	defer gs.Stop()
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	p := profileClients(t, 4, func() func() bool {
		return func() bool {
			out := new(wrapperspb.StringValue)
			err := cc.Invoke(context.Background(), "/t.Primes/Count", wrapperspb.Int64(3000), out)
			if err != nil || out.Value != "430" {
				t.Errorf("Count: %v %q", err, out.Value)
			}
			return err == nil && out.Value == "430"
		}
	})
	c := Analyze(p, nil, Evidence{Endpoint: "/t.Primes/Count"}, DefaultRules()).CPU
	server := cpuUnder(p, `^google\.golang\.org/grpc\.\(\*Server\)\.|^google\.golang\.org/grpc/internal/transport\.(\(\*http2Server\)|NewServerTransport)`)
	handler := cpuUnder(p, `^google\.golang\.org/grpc\.\(\*Server\)\.handleStream$`)
	background := cpuUnder(p, `analyzers\.spin$`)
	t.Logf("CPU split: %+v; grpc server goroutines %.2f s, under handleStream %.2f s, ticker %.2f s", c, server, handler, background)
	if server-handler < 0.05 {
		t.Skipf("grpc's transport goroutines took %.2f s: too few samples", server-handler)
	}
	if c.Serving < 0.95*server {
		t.Errorf("serving %.2f s, but grpc's server goroutines took %.2f s (%.2f s under handleStream)", c.Serving, server, handler)
	}
	if c.Background < 0.9*background {
		t.Errorf("background %.2f s, but the own ticker goroutine took %.2f s", c.Background, background)
	}
}
