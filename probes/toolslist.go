package probes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/probehq/probe/lib/h1"
)

// ToolsList loads MCP tools/list over streamable HTTP. Each virtual client
// opens its own session (initialize, notifications/initialized) — measured
// as rows of their own — then lists the tools in a loop. The exchange is the
// protocol's JSON-RPC as the official SDK's client sends it, on probe's lean
// connection so that the generator is not the limit. The endpoint is the
// one named, or the first that answers initialize of /mcp, what
// /.well-known/mcp.json or /.well-known/mcp name, and the <link rel="mcp">
// of the home page.
type ToolsList struct {
	Path     string // the MCP endpoint; empty: discover it
	endpoint string
}

func (*ToolsList) Name() string { return "toolslist" }

const mcpProtocolVersion = "2025-06-18"

func (l *ToolsList) path() string { return l.endpoint }

func (l *ToolsList) Prepare(ctx context.Context, t *Target, c *Client) error {
	if l.Path != "" {
		l.endpoint = l.Path
		_, err := l.NewSession(ctx, c, -1)
		return err
	}
	st := newSite(t)
	candidates := []string{"/mcp"}
	for _, wk := range []string{"/.well-known/mcp.json", "/.well-known/mcp"} {
		if status, body, err := get(c, wk); err == nil && status == 200 {
			if p, ok := st.localPath(wellKnownMCP(body), t.URL.String()+wk); ok && wellKnownMCP(body) != "" {
				candidates = append(candidates, p)
			}
		}
	}
	if status, body, err := get(c, "/"); err == nil && status == 200 {
		links, _ := parseHTML(body)
		for _, lk := range links {
			if strings.Contains(" "+lk.rel+" ", " mcp ") || strings.Contains(lk.typ, "mcp") {
				if p, ok := st.localPath(lk.href, t.URL.String()+"/"); ok {
					candidates = append(candidates, p)
				}
			}
		}
	}
	var tried []string
	for _, p := range candidates {
		if slices.Contains(tried, p) {
			continue
		}
		l.endpoint = p
		if _, err := l.NewSession(ctx, c, -1); err != nil {
			tried = append(tried, fmt.Sprintf("%s (%v)", p, err))
			continue
		}
		return nil
	}
	return &NotFound{Microload: "toolslist", What: "no MCP endpoint answered initialize", Tried: tried}
}

func (l *ToolsList) NewSession(ctx context.Context, c *Client, id int) (Session, error) {
	t := c.Target()
	headers := []h1.Field{{Name: "Content-Type", Value: "application/json"}, {Name: "Accept", Value: "application/json, text/event-stream"}}
	init := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"probe","version":"0.1"}}}`, mcpProtocolVersion)
	do := c.Do
	if id < 0 {
		do = func(call Call) (*Reply, error) { // Prepare: not measured
			if err := c.conn.Do(call.Req, &c.resp); err != nil {
				return nil, err
			}
			return c.verify(call)
		}
	}
	reply, err := do(Call{Op: "initialize", Key: "initialize", Req: t.Request("POST", l.path(), []byte(init), headers...), Check: checkJSONRPC(nil)})
	if err != nil {
		return nil, fmt.Errorf("MCP initialize: %v", err)
	}
	// A stateful server names the session; a stateless one does not.
	if sid := reply.Header("Mcp-Session-Id"); sid != "" {
		headers = append(headers, h1.Field{Name: "Mcp-Session-Id", Value: sid})
	}
	headers = append(headers, h1.Field{Name: "MCP-Protocol-Version", Value: mcpProtocolVersion})
	notify := `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`
	if _, err := do(Call{Op: "notifications/initialized", Key: "notifications/initialized", Req: t.Request("POST", l.path(), []byte(notify), headers...),
		Check: func(r *Reply) error {
			if r.Status != 202 && r.Status != 200 {
				return fmt.Errorf("status %d", r.Status)
			}
			return nil
		}}); err != nil {
		return nil, fmt.Errorf("MCP notifications/initialized: %v", err)
	}
	// Clients number their requests: each session cycles through a few ids,
	// each id a request key, so that replies that differ only in the id they
	// echo show that the rest does not depend on the request.
	calls := make(staticSession, listIDs)
	for k := range calls {
		id := 2 + (k+max(id, 0))%listIDs
		list := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{}}`, id)
		calls[k] = Call{Op: "tools/list", Key: fmt.Sprintf("tools/list id=%d", id), Req: t.Request("POST", l.path(), []byte(list), headers...),
			Check: checkJSONRPC(checkTools)}
	}
	return calls, nil
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

// checkJSONRPC checks a JSON-RPC reply (JSON, not an event stream) and hands
// its result to more.
func checkJSONRPC(more func(json.RawMessage) error) func(*Reply) error {
	return func(r *Reply) error {
		if err := wantStatus(r, 200, "application/json"); err != nil {
			return err
		}
		var msg struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.Body, &msg); err != nil {
			return fmt.Errorf("reply is not JSON-RPC: %v", err)
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
