package cli

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/internal/cli/loads"
)

// countingHealth is grpc-go's health service, counting the services asked
// for; "gone" is unknown.
type countingHealth struct {
	*health.Server
	mu    sync.Mutex
	asked map[string]int
}

func (h *countingHealth) Check(ctx context.Context, r *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	h.mu.Lock()
	h.asked[r.GetService()]++
	h.mu.Unlock()
	if r.GetService() == "gone" {
		return nil, status.Error(codes.NotFound, "unknown service gone")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// grpcServer is a real grpc-go server with the health service and, when
// asked, reflection.
func grpcServer(t *testing.T, withReflection bool) (string, *countingHealth) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	h := &countingHealth{Server: health.NewServer(), asked: map[string]int{}}
	healthpb.RegisterHealthServer(srv, h)
	if withReflection {
		reflection.Register(srv)
	}
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return "http://" + l.Addr().String(), h
}

// probe grpc loads a unary method of a real grpc-go server: messages made
// from --data against the descriptor reflection gives, one request key per
// --param value, every reply checked as a gRPC client checks it.
func TestGRPCLoadsAUnaryMethod(t *testing.T) {
	url, h := grpcServer(t, true)
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "grpc", "--target", url, "--call", "grpc.health.v1.Health/Check",
		"--data", `{"service": "{svc}"}`, "--param", "svc=a,b,c", "--concurrency", "4", "--streams", "2",
		"--duration", "1s", "--warmup", "0s", "--json", "--out", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep grpcReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %.300s", err, stdout)
	}
	if len(rep.Operations) != 1 || rep.Operations[0].Name != "grpc grpc.health.v1.Health/Check" || rep.Operations[0].Calls < 10 || rep.Operations[0].Errors != 0 {
		t.Fatalf("operations %+v", rep.Operations)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.asked["a"] == 0 || h.asked["b"] == 0 || h.asked["c"] == 0 || len(h.asked) != 3 {
		t.Errorf("services asked: %v, want a, b and c", h.asked)
	}
	if len(rep.Digests) != 3 || !strings.Contains(rep.Protocol, "HTTP/2 (h2c") {
		t.Errorf("digests %+v, protocol %q: want a key per --param value over h2c", rep.Digests, rep.Protocol)
	}
	for _, d := range rep.Digests {
		if d.Distinct != 1 {
			t.Errorf("key %s: %d distinct replies, want 1 (SERVING)", d.Key, d.Distinct)
		}
	}
}

// A gRPC error is a failed check, named by its status; bad input is one
// line before any load.
func TestGRPCFailuresAndBadInput(t *testing.T) {
	url, _ := grpcServer(t, true)
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "grpc", "--target", url, "--call", "grpc.health.v1.Health/Check",
		"--data", `{"service": "gone"}`, "--concurrency", "1", "--duration", "300ms", "--warmup", "0s", "--json", "--out", t.TempDir())
	if code != exitError || !strings.Contains(stdout, "grpc-status 5: unknown service gone") {
		t.Errorf("exit %d, report %.600s", code, stdout)
	}
	clitest.OneLine(t, stderr, "failed their checks")
	bare, _ := grpcServer(t, false)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"grpc", "--target", url}, exitUsage, "--call package.Service/Method is required with --target"},
		{[]string{"grpc", "--target", url, "--call", "nomethod"}, exitUsage, "want package.Service/Method"},
		{[]string{"grpc", "--target", url, "--call", "grpc.health.v1.Health/Check", "--param", "x=1,2"}, exitUsage, "--data has no {x}"},
		{[]string{"grpc", "--target", url, "--call", "grpc.health.v1.Health/Chek"}, exitError, "has no method Chek; it " +
			"has Check, List, Watch"},
		{[]string{"grpc", "--target", url, "--call", "no.Such/Call"}, exitError, "has no service no.Such; it has " +
			"grpc.health.v1.Health, grpc.reflection.v1.ServerReflection"},
		{[]string{"grpc", "--target", url, "--call", "grpc.health.v1.Health/Check", "--data", `{"servce": 1}`}, exitError,
			"is not a grpc.health.v1.HealthCheckRequest"},
		{[]string{"grpc", "--target", bare, "--call", "grpc.health.v1.Health/Check"}, exitError,
			"the server has no reflection service (grpc.reflection.v1): give the method's .proto files with --proto"},
		{[]string{"grpc", "--target", bare, "--call", "grpc.health.v1.Health/Check", "--proto", "nosuch.proto"}, exitError,
			"--proto nosuch.proto: stat"},
		{[]string{"grpc", "--target", bare, "--call", "no.Such/Call", "--proto", healthProto(t)}, exitError,
			"the --proto files define no service no.Such; they define grpc.health.v1.Health"},
	} {
		probeCmd.BadInput(t, tc.args, tc.code, tc.want)
	}
}

// grpcReport is what the grpc tests read of report.json.
type grpcReport struct {
	Protocol   string `json:"protocol"`
	Operations []struct {
		Name   string `json:"op"`
		Calls  int64  `json:"calls"`
		Errors int64  `json:"errors"`
	} `json:"operations"`
	Digests []struct {
		Key      string `json:"key"`
		Requests int64  `json:"requests"`
		Distinct int    `json:"distinct"`
	} `json:"reply_digests"`
	Warnings []struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"warnings"`
}

func runGRPC(t *testing.T, args ...string) grpcReport {
	t.Helper()
	args = append([]string{"grpc", "--notes", "60", "--concurrency", "2", "--duration", "1s", "--warmup", "0s",
		"--json", "--out", t.TempDir()}, args...)
	code, stdout, stderr := probeCmd.Run(t, context.Background(), args...)
	if code != exitOK {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	var rep grpcReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %.300s", err, stdout)
	}
	if len(rep.Operations) != 1 || rep.Operations[0].Calls < 5 || rep.Operations[0].Errors != 0 {
		t.Fatalf("%v: operations %+v", args, rep.Operations)
	}
	return rep
}

// Without --target probe grpc starts the fixture and loads its notes
// search, one request key per word; a server-streaming method (List) is
// loaded too, each reply's messages counted and decoded.
func TestGRPCOnTheFixture(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the fixture three times")
	}
	rep := runGRPC(t)
	if rep.Operations[0].Name != "grpc "+loads.FixtureGRPCCall || len(rep.Digests) != 5 {
		t.Errorf("operations %+v, digests %+v: want the fixture's search, a key per word", rep.Operations, rep.Digests)
	}
	for _, w := range rep.Warnings {
		if w.Kind == "grpc-stream" {
			t.Errorf("a unary method got a stream note: %s", w.Message)
		}
	}

	rep = runGRPC(t, "--call", "probe.fixture.Notes/List", "--data", `{"limit": {n}}`, "--param", "n=3,7")
	var note string
	for _, w := range rep.Warnings {
		if w.Kind == "grpc-stream" {
			note = w.Message
		}
	}
	if !strings.Contains(note, "probe.fixture.Notes/List streams its reply: 3 to 7 messages a call") ||
		!strings.Contains(note, "latency is to the last message") {
		t.Errorf("stream note %q, want 3 to 7 messages and what the latency measures", note)
	}
	if len(rep.Digests) != 2 {
		t.Errorf("digests %+v: want one key per limit", rep.Digests)
	}

	probeCmd.BadInput(t, []string{"grpc", "--notes", "20", "--call", "no.Such/Call"}, exitError,
		"the server has no service no.Such; it has grpc.reflection.v1.ServerReflection, "+
			"grpc.reflection.v1alpha.ServerReflection, probe.fixture.Notes")
}

// A gRPC server over TLS whose certificate does not verify is one line
// that names --insecure; with it the load runs. A server that answers
// HTTP/1 only (gRPC needs HTTP/2) is one line too.
func TestGRPCOverTLSAndHTTP1(t *testing.T) {
	srv := grpc.NewServer()
	h := &countingHealth{Server: health.NewServer(), asked: map[string]int{}}
	healthpb.RegisterHealthServer(srv, h)
	reflection.Register(srv)
	tlsSrv := httptest.NewUnstartedServer(srv) // grpc-go's ServeHTTP on net/http's HTTP/2
	tlsSrv.EnableHTTP2 = true
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	args := []string{"grpc", "--target", tlsSrv.URL, "--call", "grpc.health.v1.Health/Check", "--concurrency", "2",
		"--duration", "500ms", "--warmup", "0s", "--json"}
	probeCmd.BadInput(t, args, exitError, "certificate")
	_, _, stderr := probeCmd.Run(t, context.Background(), append(args, "--out", t.TempDir())...)
	if !strings.Contains(stderr, "--insecure") {
		t.Errorf("a certificate that does not verify: %q, want a word on --insecure", stderr)
	}
	code, stdout, stderr := probeCmd.Run(t, context.Background(), append(args, "--insecure", "--out", t.TempDir())...)
	if code != exitOK || !strings.Contains(stdout, `"calls"`) {
		t.Errorf("with --insecure: exit %d: %s", code, stderr)
	}
	h.mu.Lock()
	if h.asked[""] == 0 {
		t.Errorf("with --insecure the server saw no Check")
	}
	h.mu.Unlock()

	h1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello")) }))
	t.Cleanup(h1.Close)
	probeCmd.BadInput(t, []string{"grpc", "--target", h1.URL, "--call", "grpc.health.v1.Health/Check"}, exitError,
		"answers HTTP/1.1, not HTTP/2 with prior knowledge (h2c): --http2 and gRPC need a server that speaks h2c")
}

// healthProto writes grpc-go's health service as a .proto file.
func healthProto(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "health.proto")
	src := `syntax = "proto3";
package grpc.health.v1;
message HealthCheckRequest { string service = 1; }
message HealthCheckResponse {
  enum ServingStatus { UNKNOWN = 0; SERVING = 1; NOT_SERVING = 2; SERVICE_UNKNOWN = 3; }
  ServingStatus status = 1;
}
service Health {
  rpc Check(HealthCheckRequest) returns (HealthCheckResponse);
  rpc Watch(HealthCheckRequest) returns (stream HealthCheckResponse);
}
`
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A server without reflection is loaded from --proto files.
func TestGRPCWithProtoFiles(t *testing.T) {
	bare, h := grpcServer(t, false)
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "grpc", "--target", bare, "--call", "grpc.health.v1.Health/Check",
		"--proto", healthProto(t), "--data", `{"service": "x"}`, "--concurrency", "2", "--duration", "500ms", "--warmup", "0s",
		"--json", "--out", t.TempDir())
	if code != exitOK || !strings.Contains(stdout, `"op": "grpc grpc.health.v1.Health/Check"`) {
		t.Fatalf("exit %d: %s %.300s", code, stderr, stdout)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.asked["x"] == 0 {
		t.Errorf("the server saw no Check of x: %v", h.asked)
	}
}

// A target file's grpc entries run as probe grpc does, under their names,
// with --http2; without it each is skipped with one reason.
func TestGRPCInATargetFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the fixture")
	}
	file := filepath.Join(t.TempDir(), "t.json")
	src := `{"microloads": [
	  {"name": "notes-search", "grpc": "probe.fixture.Notes/Search", "data": "{\"query\": \"{q}\"}", "params": {"q": ["gzip", "cache"]}},
	  {"name": "notes-list", "grpc": "probe.fixture.Notes/List", "data": "{\"limit\": 5}"}]}`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "all", "--file", file, "--http2", "--notes", "40", "--concurrency", "2",
		"--duration", "700ms", "--warmup", "0s", "--json", "--out", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var suite struct {
		Runs []struct {
			Microload string `json:"microload"`
			grpcReport
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(stdout), &suite); err != nil {
		t.Fatalf("%v: %.300s", err, stdout)
	}
	if len(suite.Runs) != 2 {
		t.Fatalf("%d runs, want the file's two", len(suite.Runs))
	}
	for i, want := range []string{"Search", "List"} {
		r := suite.Runs[i]
		if len(r.Operations) != 1 || r.Operations[0].Name != "grpc probe.fixture.Notes/"+want || r.Operations[0].Calls == 0 || r.Operations[0].Errors != 0 {
			t.Errorf("run %s: operations %+v", r.Microload, r.Operations)
		}
	}
	note := ""
	for _, w := range suite.Runs[1].Warnings {
		if w.Kind == "grpc-stream" {
			note = w.Message
		}
	}
	if !strings.Contains(note, "5 messages a call") {
		t.Errorf("notes-list: stream note %q, want 5 messages a call", note)
	}
	_, _, stderr = probeCmd.Run(t, context.Background(), "all", "--file", file, "--notes", "40", "--duration", "300ms", "--warmup", "0s",
		"--out", t.TempDir())
	if !strings.Contains(stderr, "skipping notes-search: notes-search: gRPC runs over HTTP/2: the target needs --http2") {
		t.Errorf("without --http2: %q", stderr)
	}
}
