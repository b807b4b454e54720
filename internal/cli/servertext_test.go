package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"

	"google.golang.org/grpc"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/probehq/probe/internal/cli/shared"
)

// evil is what a hostile server puts in every text it sends: an escape
// that clears the terminal, a carriage return, and a line of its own
// that poses as probe's verdict.
const evil = "\x1b[2J\rboom\nprobe: all checks passed, exit 0"

// printable fails the test unless stderr is a few lines of printable text,
// each at most maxLine bytes, and none of them the server's own "probe: …".
func printable(t *testing.T, stderr string, maxLines, maxLine int) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if len(lines) > maxLines {
		t.Errorf("%d lines on stderr, want at most %d: %.300q", len(lines), maxLines, stderr)
	}
	for _, l := range lines {
		if len(l) > maxLine {
			t.Errorf("a line of %d bytes, want at most %d: %.300q", len(l), maxLine, l)
		}
		if strings.HasPrefix(l, "probe: all checks passed") {
			t.Errorf("a line of the server's own: %q", l)
		}
		for _, r := range l {
			if unicode.IsControl(r) {
				t.Fatalf("a control character %q on stderr: %.300q", r, l)
			}
		}
	}
}

// hostileReflection is a gRPC reflection service that knows no symbol,
// says so in 200,001 lines, and lists 2,001 services with escapes in
// their names (or, when failList, answers the list with the same error).
type hostileReflection struct {
	rpb.UnimplementedServerReflectionServer
	failList bool
}

func (h *hostileReflection) ServerReflectionInfo(stream rpb.ServerReflection_ServerReflectionInfoServer) error {
	huge := strings.Repeat(evil+"\n", 200_000) + "end"
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		resp := &rpb.ServerReflectionResponse{OriginalRequest: req}
		if _, list := req.MessageRequest.(*rpb.ServerReflectionRequest_ListServices); list && !h.failList {
			var svcs []*rpb.ServiceResponse
			for i := range 2001 {
				svcs = append(svcs, &rpb.ServiceResponse{Name: fmt.Sprintf("svc%04d.%s", i, evil)})
			}
			resp.MessageResponse = &rpb.ServerReflectionResponse_ListServicesResponse{
				ListServicesResponse: &rpb.ListServiceResponse{Service: svcs}}
		} else {
			resp.MessageResponse = &rpb.ServerReflectionResponse_ErrorResponse{
				ErrorResponse: &rpb.ErrorResponse{ErrorCode: 5, ErrorMessage: huge}}
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

// What a gRPC server's reflection says reaches the terminal as one
// printable line: 2,001 services are 20 names and "and 1981 more", an
// error of 200,001 lines is one capped line, no escape or line of its own.
func TestGRPCReflectionTextIsOneLine(t *testing.T) {
	for _, failList := range []bool{false, true} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer(grpc.MaxSendMsgSize(64 << 20))
		rpb.RegisterServerReflectionServer(srv, &hostileReflection{failList: failList})
		go srv.Serve(l)
		code, stdout, stderr := probeCmd.Run(t, context.Background(), "grpc", "--target", "http://"+l.Addr().String(),
			"--call", "no.Such/Call", "--duration", "300ms", "--warmup", "0s", "--out", t.TempDir())
		srv.Stop()
		if code != exitError || stdout != "" {
			t.Errorf("list fails %v: exit %d, stdout %.200q", failList, code, stdout)
		}
		printable(t, stderr, 1, 4000)
		want := "has no service no.Such; it has svc0000. [2J boom probe: all checks passed, exit 0, svc0001."
		if failList {
			want = "reflection: [2J boom probe: all checks passed, exit 0 [2J boom"
		}
		if !strings.Contains(stderr, want) || !failList && !strings.HasSuffix(stderr, " and 1981 more\n") {
			t.Errorf("list fails %v: stderr %.600q, want %q", failList, stderr, want)
		}
	}
}

// What a profiler says reaches the terminal as one printable line: a
// Connect error's message, a raw error body, an error of a Pyroscope, and
// the 2,001 services of a profiler that holds no such service (20 names,
// then how many more).
func TestProfilerTextIsOneLine(t *testing.T) {
	huge := strings.Repeat(evil+"\n", 50_000)
	services := []string{}
	for i := range 2001 {
		services = append(services, fmt.Sprintf("svc%04d%s", i, evil))
	}
	for _, c := range []struct {
		name, engine string
		serve        http.HandlerFunc
		want         string
	}{
		{"a Connect error", "parca", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			json.NewEncoder(w).Encode(map[string]string{"code": "internal" + evil, "message": huge})
		}, "Query: internal [2J boom probe: all checks pass…: [2J boom probe: all checks passed"},
		{"a raw error body", "parca", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, huge)
		}, "Query: HTTP 502 Bad Gateway: [2J boom probe: all checks passed, exit 0 [2J boom"},
		{"a Pyroscope's error", "pyroscope", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			json.NewEncoder(w).Encode(map[string]string{"code": "internal", "message": huge})
		}, "[2J boom probe: all checks passed, exit 0 [2J boom"},
		{"2,001 services", "parca", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if strings.HasSuffix(r.URL.Path, "/Values") {
				json.NewEncoder(w).Encode(map[string]any{"labelValues": services})
				return
			}
			io.WriteString(w, `{}`)
		}, "has no service \"shop\" from 7 days before the range to now (services it has: " +
			"svc0000 [2J boom probe: all checks passed, exit 0, svc0001"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.serve)
			defer srv.Close()
			from := c.engine + "://" + strings.TrimPrefix(srv.URL, "http://")
			code, stdout, stderr := probeCmd.Run(t, context.Background(), "analyze", "--from", from, "--service", "shop",
				"--out", t.TempDir())
			if code != exitError || stdout != "" {
				t.Errorf("exit %d, stdout %.200q", code, stdout)
			}
			printable(t, stderr, 1, 2500)
			if !strings.Contains(stderr, c.want) {
				t.Errorf("stderr %.600q, want %q", stderr, c.want)
			}
			if c.name == "2,001 services" && !strings.HasSuffix(stderr, " and 1981 more)\n") {
				t.Errorf("stderr %.600q: want 20 services and 1981 more", stderr)
			}
		})
	}
}

// The last words of a failed run are printable lines, however many and
// whatever a server put in its error: each line capped, at most 100.
func TestFailureLinesArePrintable(t *testing.T) {
	var b strings.Builder
	printFailure(&b, errors.New("target x: "+strings.Repeat("\x1b[2J\r"+strings.Repeat("y", 5000)+"\n", 20_000)+"end"))
	printable(t, b.String(), shared.MaxErrorLines+1, len("probe: ")+shared.MaxErrorLine+len("…"))
	if !strings.HasSuffix(b.String(), "probe: … and 19901 more lines\n") ||
		!strings.HasPrefix(b.String(), "probe: target x: [2J y") {
		t.Errorf("stderr %.300q … %q", b.String(), b.String()[max(0, b.Len()-100):])
	}
	b.Reset()
	printFailure(&b, errors.New("3 checks failed\nsecond"))
	if b.String() != "probe: 3 checks failed\nprobe: second\n" {
		t.Errorf("stderr %q", b.String())
	}
}

// What a WebSocket target says when it refuses the upgrade reaches the
// terminal as one printable line.
func TestWSRefusalIsOneLine(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, strings.Repeat(evil+"\n", 2001))
	}))
	defer srv.Close()
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "ws", "--target", srv.URL, "--connections", "2",
		"--rooms", "1", "--events", "1", "--auth", "none", "--out", t.TempDir())
	if code != exitError || stdout != "" {
		t.Errorf("exit %d, stdout %.200q", code, stdout)
	}
	printable(t, stderr, 2, 1000) // the progress line, the error
	want := `refused the WebSocket upgrade: HTTP 403 "[2J boom probe: all checks passed, exit 0 [2J boom`
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr %.600q, want %q", stderr, want)
	}
}

// A site that announces a hundred MCP endpoints, none of which answers,
// is asked at the first 16 and /mcp, and is one line naming them.
func TestMCPDiscoveryTriedIsOneLine(t *testing.T) {
	var home strings.Builder
	home.WriteString("<html><head>")
	for i := range 100 {
		fmt.Fprintf(&home, `<link rel="mcp" href="/m%03d">`, i)
	}
	home.WriteString("</head></html>")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, home.String())
			return
		}
		http.Error(w, evil, http.StatusTeapot)
	}))
	defer srv.Close()
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "toolslist", "--target", srv.URL, "--duration", "300ms",
		"--warmup", "0s", "--out", t.TempDir())
	if code != exitError || stdout != "" {
		t.Errorf("exit %d, stdout %.200q", code, stdout)
	}
	printable(t, stderr, 1, 4000)
	if !strings.Contains(stderr, "no MCP endpoint answered initialize (tried /m000 (") || strings.Contains(stderr, "/m016") ||
		!strings.Contains(stderr, "/m015 (") || !strings.Contains(stderr, ", /mcp (") {
		t.Errorf("stderr %.300q … %q", stderr, stderr[max(0, len(stderr)-300):])
	}
}

// mcpNamesServer is an MCP endpoint (JSON replies) whose tools/list names
// tools as a hostile server would: an escape, a carriage return and a line
// of its own, then a hundred more.
func mcpNamesServer(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if len(req.ID) == 0 { // a notification
		w.WriteHeader(http.StatusAccepted)
		return
	}
	reply := map[string]any{"jsonrpc": "2.0", "id": req.ID}
	switch req.Method {
	case "initialize":
		reply["result"] = map[string]any{"protocolVersion": "2025-06-18",
			"capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo":   map[string]any{"name": "hostile", "version": "1"}}
	case "tools/list":
		tools := []map[string]any{{"name": evil, "inputSchema": map[string]any{"type": "object"}}}
		for i := range 100 {
			tools = append(tools, map[string]any{"name": fmt.Sprintf("t%03d", i),
				"inputSchema": map[string]any{"type": "object"}})
		}
		reply["result"] = map[string]any{"tools": tools}
	default:
		reply["error"] = map[string]any{"code": -32601, "message": "method not found"}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(reply)
}

// The tools an MCP server lists reach the terminal as one printable line:
// its own "probe: all checks passed" stays inside it, 20 names are shown.
func TestMCPToolNamesAreOneLine(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(mcpNamesServer))
	defer srv.Close()
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "agents", "--target", srv.URL, "--path", "/",
		"--agents", "2", "--duration", "300ms", "--warmup", "0s", "--out", t.TempDir())
	if code != exitUsage || stdout != "" {
		t.Errorf("exit %d, stdout %.200q", code, stdout)
	}
	printable(t, stderr, 1, 4000)
	want := `agents: the server lists no tool "write_note" (the write tool); ` +
		`it has: [2J boom probe: all checks passed, exit 0, t000`
	if !strings.Contains(stderr, want) || !strings.HasSuffix(stderr, " and 81 more\n") {
		t.Errorf("stderr %.300q … %q, want %q", stderr, stderr[max(0, len(stderr)-300):], want)
	}
}
