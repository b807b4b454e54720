package mcp

import (
	"encoding/json"
	"strings"
	"testing"
)

// A tool's name is the server's text: what the report and the terminal
// say of it (the crash's endpoint, a tool skipped) holds no control
// character (an escape sequence, a line of its own), while the call
// still names the tool as listed.
func TestFuzzToolNamesSaidAsText(t *testing.T) {
	evil := "run\x1b]0;owned\x07\n## fake heading"
	s := &FuzzServer{Lane: Lane{Version: sessionVersion}, Path: "/mcp", Tools: []ToolSchema{
		{Name: evil, InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
		{Name: evil + "2", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	ts, skipped, err := s.FuzzTemplates(nil)
	if err != nil || len(ts) != 1 || len(skipped) != 1 {
		t.Fatalf("%d templates, skipped %v: %v", len(ts), skipped, err)
	}
	for _, said := range []string{ts[0].Endpoint, skipped[0].Tool} {
		if strings.ContainsAny(said, "\x1b\x07\n") {
			t.Errorf("the tool's name said raw: %q", said)
		}
	}
	var call struct {
		Params struct{ Name string } `json:"params"`
	}
	if err := json.Unmarshal(ts[0].Request([]string{"1"}).Body, &call); err != nil || call.Params.Name != evil {
		t.Errorf("the call names %q (%v), want the tool as listed", call.Params.Name, err)
	}
}
