package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/result"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/textline"
)

// ToolsCall loads one MCP tool over streamable HTTP: each virtual client
// opens its own session (initialize, notifications/initialized, rows of
// their own, as toolslist does), then calls the tool in a loop with its
// arguments, a JSON object whose {name} holes Params fill: each filled
// object is a request key. A reply that is a JSON-RPC error, or a tool
// result with isError, is a failed call.
type ToolsCall struct {
	Path      string // the MCP endpoint (default /mcp)
	Tool      string
	Arguments string // a JSON object; {name} is filled from Params
	Params    []probes.Param
	Header    []h1.Field // sent with every call (an API key, a cookie)
	Label     string     // the microload's name (a target file's entry); empty: tools/call

	bodies []toolCall
	lane   Lane
}

type toolCall struct {
	key  string
	body []byte
}

// maxToolArguments bounds a call's arguments.
const maxToolArguments = 1 << 20

func (l *ToolsCall) Name() string {
	if l.Label != "" {
		return l.Label
	}
	return "tools/call"
}

func (l *ToolsCall) path() string {
	if l.Path == "" {
		return "/mcp"
	}
	return l.Path
}

func (l *ToolsCall) Prepare(ctx context.Context, t *probes.Target, c *probes.Client) error {
	if l.Tool == "" {
		return fmt.Errorf("tools/call: no tool named")
	}
	args := l.Arguments
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	filled, err := probes.ExpandData(args, l.Params)
	if err != nil {
		return err
	}
	l.bodies = l.bodies[:0]
	for _, a := range filled {
		if len(a) > maxToolArguments {
			return fmt.Errorf("the arguments are %d bytes; at most %d", len(a), maxToolArguments)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(a), &obj); err != nil {
			return fmt.Errorf("arguments %s: not a JSON object: %v", textline.Of(a, 200), err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(a)); err != nil {
			return fmt.Errorf("arguments %s: %v", textline.Of(a, 200), err)
		}
		l.bodies = append(l.bodies, toolCall{key: "tools/call " + l.Tool + " " + a, body: compact.Bytes()})
	}
	if l.lane, err = prepareLane(c, l.path(), l.Header); err != nil {
		return err
	}
	for i, b := range l.bodies {
		name, _ := json.Marshal(l.Tool)
		l.bodies[i].body = l.lane.body(2, "tools/call", fmt.Sprintf(`"name":%s,"arguments":%s`, name, b.body))
	}
	// One call, unmeasured: a tool the server does not have, or arguments
	// it refuses, is said before the load.
	headers, err := openMCP(c, l.path(), -1, l.lane, l.Header)
	if err != nil {
		return err
	}
	call := l.call(t, 0, headers)
	if _, err := c.Unmeasured(call); err != nil {
		return fmt.Errorf("MCP tools/call %s: %v", textline.Of(l.Tool, 80), err)
	}
	return nil
}

// call is the session's tools/call of arguments i.
func (l *ToolsCall) call(t *probes.Target, i int, headers []h1.Field) probes.Call {
	tc := l.bodies[i%len(l.bodies)]
	return probes.Call{Op: "tools/call " + l.Tool, Key: tc.key, Check: checkToolCall,
		Req: post(t, l.path(), tc.body, l.lane.headers(headers, "tools/call", l.Tool)...)}
}

func (l *ToolsCall) NewSession(ctx context.Context, c *probes.Client, id int) (probes.Session, error) {
	headers, err := openMCP(c, l.path(), id, l.lane, l.Header)
	if err != nil {
		return nil, err
	}
	calls := make(probes.StaticSession, len(l.bodies))
	for k := range calls {
		calls[k] = l.call(c.Target(), k+max(id, 0), headers)
	}
	return calls, nil
}

// MCPLane is the lane Prepare negotiated, for the report.
func (l *ToolsCall) MCPLane() result.MCPLane { return l.lane.result() }

// checkToolCall checks a tools/call reply: JSON-RPC with a result, not a
// refusal (the server's words quoted).
func checkToolCall(r *probes.Reply) error {
	if err := JSONRPCRefusal(r); err != nil {
		return err
	}
	return checkJSONRPC(nil)(r)
}

// maxToolErrorText bounds the tool's own words quoted in an error.
const maxToolErrorText = 160

// checkToolResult fails a tool result that says it is an error (isError),
// quoting its first text.
func checkToolResult(result json.RawMessage) error {
	var r struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(result, &r); err != nil || !r.IsError {
		return nil // a result of another shape is the tool's own
	}
	text := ""
	for _, c := range r.Content {
		if c.Type == "text" && c.Text != "" {
			text = ": " + textline.Of(c.Text, maxToolErrorText)
			break
		}
	}
	return fmt.Errorf("MCP tool error (isError)%s", text)
}

// JSONRPCRefusal is the refusal a reply to a JSON-RPC request carries: a
// JSON-RPC error (its code and message) or an MCP tool result with
// isError; nil for any other reply, JSON-RPC or not. The experiment holds
// a variant of a JSON-RPC request to it: a server that refuses the
// variant answers 200 all the same.
func JSONRPCRefusal(r *probes.Reply) error {
	msg, err := readRPCReply(r)
	if err != nil {
		return nil
	}
	if msg.Error != nil {
		return fmt.Errorf("JSON-RPC error %d: %s", msg.Error.Code, textline.Of(msg.Error.Message, maxToolErrorText))
	}
	if msg.Result != nil {
		return checkToolResult(msg.Result)
	}
	return nil
}
