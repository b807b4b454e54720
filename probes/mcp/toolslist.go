package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/web"
	"github.com/probehq/probe/result"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/textline"
)

// ToolsList loads MCP tools/list over streamable HTTP. Each virtual client
// opens what the server's lane asks (server/discover in the stateless lane
// of 2026-07-28; initialize, notifications/initialized in the session
// lane) — measured as rows of their own — then lists the tools in a loop. The exchange is the
// protocol's JSON-RPC as the official SDK's client sends it, on probe's lean
// connection so that the generator is not the limit. The endpoint is the
// one named, or the first that answers initialize of /mcp, what
// /.well-known/mcp.json or /.well-known/mcp name, and the <link rel="mcp">
// of the home page.
type ToolsList struct {
	Path     string // the MCP endpoint; empty: discover it
	endpoint string
	lane     Lane
}

func (*ToolsList) Name() string { return "toolslist" }

func (l *ToolsList) path() string { return l.endpoint }

func (l *ToolsList) Prepare(ctx context.Context, t *probes.Target, c *probes.Client) error {
	if l.Path != "" {
		l.endpoint = l.Path
		var err error
		l.lane, err = prepareLane(c, l.path(), nil)
		return err
	}
	candidates := web.MCPEndpoints(c)
	var tried []string
	for _, p := range candidates {
		if slices.Contains(tried, p) {
			continue
		}
		l.endpoint = p
		var err error
		if l.lane, err = prepareLane(c, p, nil); err != nil {
			tried = append(tried, fmt.Sprintf("%s (%v)", p, err))
			continue
		}
		return nil
	}
	return &probes.NotFound{Microload: "toolslist", What: "no MCP endpoint answered initialize", Tried: tried}
}

func (l *ToolsList) NewSession(ctx context.Context, c *probes.Client, id int) (probes.Session, error) {
	t := c.Target()
	headers, err := openMCP(c, l.path(), id, l.lane, nil)
	if err != nil {
		return nil, err
	}
	// Clients number their requests: each session cycles through a few ids,
	// each id a request key, so that replies that differ only in the id they
	// echo show that the rest does not depend on the request.
	calls := make(probes.StaticSession, listIDs)
	for k := range calls {
		id := 2 + (k+max(id, 0))%listIDs
		list := l.lane.body(id, "tools/list", "")
		calls[k] = probes.Call{Op: "tools/list", Key: fmt.Sprintf("tools/list id=%d", id),
			Req:   post(t, l.path(), list, l.lane.headers(headers, "tools/list", "")...),
			Check: checkJSONRPC(checkTools)}
	}
	return calls, nil
}

// openMCPSession opens an MCP session on path as the official SDK's
// client does (initialize, notifications/initialized) and returns the
// header fields its requests carry: the session's id when the server
// names one, and the protocol's version the server answered, after extra
// (an entry's own fields: a key the server asks of every request,
// initialize's too); and that version. id < 0: Prepare's, not measured.
func openMCPSession(c *probes.Client, path string, id int, extra ...h1.Field) ([]h1.Field, string, error) {
	t := c.Target()
	headers := baseHeaders(extra)
	init := Lane{}.body(1, "initialize",
		fmt.Sprintf(`"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"probe","version":"0.1"}`, sessionVersion))
	do := c.Do
	if id < 0 {
		do = c.Unmeasured // Prepare's
	}
	var version string
	reply, err := do(probes.Call{Op: "initialize", Key: "initialize", Req: post(t, path, init, headers...),
		Check: checkJSONRPC(func(result json.RawMessage) error {
			var r struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = json.Unmarshal(result, &r)
			version = r.ProtocolVersion
			if !slices.Contains(sessionVersions, version) {
				return fmt.Errorf("the server answers protocol version %q; probe speaks %s",
					textline.Of(version, 40), strings.Join(sessionVersions, ", "))
			}
			return nil
		})})
	if err != nil {
		return nil, "", fmt.Errorf("MCP initialize: %v", err)
	}
	// A stateful server names the session; a stateless one does not.
	if sid := reply.Header("Mcp-Session-Id"); sid != "" {
		headers = append(headers, h1.Field{Name: "Mcp-Session-Id", Value: sid})
	}
	headers = append(headers, h1.Field{Name: "MCP-Protocol-Version", Value: version})
	notify := `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`
	if _, err := do(probes.Call{Op: "notifications/initialized", Key: "notifications/initialized",
		Req: post(t, path, []byte(notify), headers...),
		Check: func(r *probes.Reply) error {
			if r.Status != 202 && r.Status != 200 {
				return fmt.Errorf("status %d", r.Status)
			}
			return nil
		}}); err != nil {
		return nil, "", fmt.Errorf("MCP notifications/initialized: %v", err)
	}
	return headers, version, nil
}

// listIDs is how many JSON-RPC ids a session cycles through.
const listIDs = 8

func checkTools(result json.RawMessage) error {
	var r struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return fmt.Errorf("tools/list result: %v", err)
	}
	if len(r.Tools) == 0 {
		return errors.New("tools/list lists no tools")
	}
	for _, tool := range r.Tools {
		if tool.Name == "" || len(tool.InputSchema) == 0 {
			return errors.New("a tool without name or input schema")
		}
	}
	return nil
}

// rpcReply is a JSON-RPC reply: its result, or its error.
type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// readRPCReply decodes r's body as a JSON-RPC reply: JSON, or an event
// stream (as the official Go SDK answers by default) whose reply is its
// first event that answers (a result or an error): the server may send
// notifications (progress, logging) and requests of its own before it.
func readRPCReply(r *probes.Reply) (rpcReply, error) {
	var msg rpcReply
	if !strings.Contains(r.Header("Content-Type"), "text/event-stream") {
		err := json.Unmarshal(r.Body, &msg)
		return msg, err
	}
	events := sseEvents(r.Body)
	for i, data := range events {
		var m struct {
			rpcReply
			Method string `json:"method"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			return msg, fmt.Errorf("event %d of the stream is not JSON: %v", i+1, err)
		}
		if m.Method == "" && (m.Result != nil || m.Error != nil) {
			return m.rpcReply, nil
		}
	}
	return msg, fmt.Errorf("the event stream's %d events hold no result or error (notifications and requests only)", len(events))
}

// checkJSONRPC checks a JSON-RPC reply (JSON, or an event stream of one
// message, as the official Go SDK answers by default) and hands its result
// to more.
func checkJSONRPC(more func(json.RawMessage) error) func(*probes.Reply) error {
	return func(r *probes.Reply) error {
		if err := probes.WantStatus(r, 200, "application/json", "text/event-stream"); err != nil {
			// The SDK refuses a protocol version with 400 and the JSON-RPC error that names the versions.
			if msg, jerr := readRPCReply(r); jerr == nil {
				if refusal := versionRefusal(msg, ""); refusal != nil {
					return refusal
				}
			}
			return err
		}
		msg, err := readRPCReply(r)
		if err != nil {
			return fmt.Errorf("reply is not JSON-RPC: %v", err)
		}
		if refusal := versionRefusal(msg, ""); refusal != nil {
			return refusal
		}
		if msg.Error != nil {
			return fmt.Errorf("JSON-RPC error %d", msg.Error.Code)
		}
		if msg.Result == nil {
			return errors.New("JSON-RPC reply without result")
		}
		if more != nil {
			return more(msg.Result)
		}
		return nil
	}
}

// Endpoint is the MCP endpoint Prepare found.
func (l *ToolsList) Endpoint() string { return l.endpoint }

// MCPLane is the lane Prepare negotiated, for the report.
func (l *ToolsList) MCPLane() result.MCPLane { return l.lane.result() }
