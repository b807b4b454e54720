package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/textline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/result"
)

// Lane is how probe speaks MCP to a server: the stateless lane of the
// 2026-07-28 protocol (server/discover, then every request carries its
// _meta and the Mcp-Method/Mcp-Name routing headers; no initialize, no
// Mcp-Session-Id) or the session lane (initialize, notifications/
// initialized, the session's id when the server names one). probe asks
// for the newest lane first, as the official SDK's client does.
type Lane struct {
	Stateless bool   // the 2026-07-28 lane
	Version   string // the protocol version measured
}

// String is the lane as the report says it.
func (ln Lane) String() string {
	if ln.Stateless {
		return "stateless " + ln.Version + " (server/discover, no session)"
	}
	return "session " + ln.Version + " (initialize)"
}

const (
	statelessVersion = "2026-07-28"
	// sessionVersion is what initialize asks for; the server may answer
	// any of sessionVersions.
	sessionVersion = "2025-11-25"
	// codeUnsupportedVersion is the JSON-RPC error of a protocol version
	// the server does not speak; its data names the versions on each side.
	codeUnsupportedVersion = -32022
)

var sessionVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// clientMeta is the _meta every request of the stateless lane carries.
var clientMeta = `{"io.modelcontextprotocol/protocolVersion":"` + statelessVersion + `",` +
	`"io.modelcontextprotocol/clientInfo":{"name":"probe","version":"0.1"},` +
	`"io.modelcontextprotocol/clientCapabilities":{}}`

// baseHeaders are the fields every request of the lane carries, before the
// session's and the method's.
func baseHeaders(extra []h1.Field) []h1.Field {
	return append([]h1.Field{{Name: "Content-Type", Value: "application/json"},
		{Name: "Accept", Value: "application/json, text/event-stream"}}, extra...)
}

// body is a JSON-RPC request of the lane: params, a JSON object's members
// without its braces ("" for none), with the lane's _meta in front.
func (ln Lane) body(id int, method, params string) []byte {
	if ln.Stateless {
		if params != "" {
			params = "," + params
		}
		params = `"_meta":` + clientMeta + params
	}
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s}}`, id, method, params)
}

// headers are the fields of a request of method (on tool name, for
// tools/call) in the lane, after the session's.
func (ln Lane) headers(session []h1.Field, method, name string) []h1.Field {
	if !ln.Stateless {
		return session
	}
	h := append(slices.Clip(session), h1.Field{Name: "Mcp-Method", Value: method})
	if name != "" {
		h = append(h, h1.Field{Name: "Mcp-Name", Value: name})
	}
	return h
}

// negotiate finds the server's lane: server/discover first (unmeasured);
// a server that does not know it, or that speaks no 2026-07-28, is asked
// initialize. A discover whose capabilities hold no tools, and a server
// that refuses both lanes' versions, are one line each.
func negotiate(c *probes.Client, path string, extra []h1.Field) (Lane, error) {
	modern := Lane{Stateless: true, Version: statelessVersion}
	headers := append(baseHeaders(extra), h1.Field{Name: "Mcp-Protocol-Version", Value: statelessVersion},
		h1.Field{Name: "Mcp-Method", Value: "server/discover"})
	reply, err := c.Unmeasured(probes.Call{Op: "server/discover", Key: "server/discover",
		Req:   post(c.Target(), path, modern.body(1, "server/discover", ""), headers...),
		Check: func(*probes.Reply) error { return nil }})
	if err != nil {
		return Lane{}, fmt.Errorf("MCP server/discover: %v", err)
	}
	session := Lane{Version: sessionVersion}
	msg, err := readRPCReply(reply)
	if err != nil {
		return session, nil // not JSON-RPC: a server of the session lane only
	}
	if msg.Error != nil {
		if refusal := versionRefusal(msg, statelessVersion); refusal != nil {
			return session, refusal
		}
		return session, nil
	}
	var d struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      map[string]json.RawMessage `json:"capabilities"`
	}
	if json.Unmarshal(msg.Result, &d) != nil || !slices.Contains(d.SupportedVersions, statelessVersion) {
		return session, nil // a session server that knows discover (the SDK's, not stateless)
	}
	if _, ok := d.Capabilities["tools"]; !ok {
		names := make([]string, 0, len(d.Capabilities))
		for k := range d.Capabilities {
			names = append(names, k)
		}
		slices.Sort(names)
		return Lane{}, fmt.Errorf("MCP server/discover: the server's capabilities hold no tools (it names: %s)",
			orNone(textline.Names(names, 40)))
	}
	return modern, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// versionRefusal is msg's error said in one line when it is the protocol's
// refusal of the version probe asked (asked): the versions on each side.
func versionRefusal(msg rpcReply, asked string) error {
	if msg.Error == nil || msg.Error.Code != codeUnsupportedVersion {
		return nil
	}
	var data struct {
		Supported []string `json:"supported"`
		Requested string   `json:"requested"`
	}
	_ = json.Unmarshal(msg.Error.Data, &data)
	if data.Requested != "" {
		asked = data.Requested
	}
	return &RefusedVersion{Asked: textline.Of(asked, 40), Supported: textline.Names(data.Supported, 40)}
}

// RefusedVersion is a server's refusal of the protocol version probe asked.
type RefusedVersion struct{ Asked, Supported string }

func (e *RefusedVersion) Error() string {
	return fmt.Sprintf("unsupported MCP protocol version: probe asked %s, the server supports %s",
		e.Asked, orNone(e.Supported))
}

// openMCP opens what the lane asks of a client before its requests and
// returns the header fields they carry (after extra: an entry's own fields,
// a key the server asks of every request). The stateless lane sends
// server/discover, as the SDK's client does on connecting; the session
// lane initialize and notifications/initialized. id < 0: Prepare's,
// not measured.
func openMCP(c *probes.Client, path string, id int, ln Lane, extra []h1.Field) ([]h1.Field, error) {
	if !ln.Stateless {
		h, _, err := openMCPSession(c, path, id, extra...)
		return h, err
	}
	do := c.Do
	if id < 0 {
		do = c.Unmeasured
	}
	headers := append(baseHeaders(extra), h1.Field{Name: "Mcp-Protocol-Version", Value: ln.Version})
	if _, err := do(probes.Call{Op: "server/discover", Key: "server/discover",
		Req:   post(c.Target(), path, ln.body(1, "server/discover", ""), ln.headers(headers, "server/discover", "")...),
		Check: checkJSONRPC(nil)}); err != nil {
		return nil, fmt.Errorf("MCP server/discover: %v", err)
	}
	return headers, nil
}

// prepareLane finds the server's lane and opens it once, unmeasured: the
// session lane's version is the one initialize answered. A refusal of the
// 2026-07-28 version is said with the session lane's failure when that
// fails too.
func prepareLane(c *probes.Client, path string, extra []h1.Field) (Lane, error) {
	ln, err := negotiate(c, path, extra)
	var refused *RefusedVersion
	if err != nil && !errors.As(err, &refused) {
		return Lane{}, err
	}
	if ln.Stateless {
		_, err := openMCP(c, path, -1, ln, extra)
		return ln, err
	}
	_, version, serr := openMCPSession(c, path, -1, extra...)
	if serr != nil {
		if refused != nil {
			return Lane{}, fmt.Errorf("MCP server/discover: %v; initialize: %v", err,
				strings.TrimPrefix(serr.Error(), "MCP initialize: "))
		}
		return Lane{}, serr
	}
	ln.Version = version
	return ln, nil
}

// result is the lane as the run's report says it.
func (ln Lane) result() result.MCPLane {
	if ln.Stateless {
		return result.MCPLane{Lane: "stateless", ProtocolVersion: ln.Version}
	}
	return result.MCPLane{Lane: "session", ProtocolVersion: ln.Version}
}
