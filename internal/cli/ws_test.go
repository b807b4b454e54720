package cli

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// The target file's ws settings fill the flags not given; a flag given
// wins; the file's rooms name the rooms, connection i joining rooms[i mod
// len(rooms)].
func TestWSOptionsFromFile(t *testing.T) {
	file, err := parseTargetFile("probe.json", []byte(`{"ws": {"path": "/live?room={room}", "auth": "header",
	  "tokenEnv": "PROBE_TEST_WS_TOKEN", "ready": "", "rooms": ["tag:a", "tag:b", "feed:c"],
	  "publishPath": "/admin/notes/live/{room}.md", "publishBody": "{event}", "publishMethod": "PUT"}}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PROBE_TEST_WS_TOKEN", "s3cret")
	parse := func(args ...string) *wsCommand {
		fs := flag.NewFlagSet("ws", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c := newWSCommand(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := c.fromFile(file); err != nil {
			t.Fatal(err)
		}
		return c
	}
	o, err := parse("--connections", "30", "--publish-body", "x {event} y").options()
	if err != nil {
		t.Fatal(err)
	}
	if o.Path != "/live?room={room}" || o.Auth != "header" || o.Token != "s3cret" || o.Ready != "" || o.Rooms != 3 ||
		strings.Join(o.RoomNames, ",") != "tag:a,tag:b,feed:c" || o.PublishMethod != "PUT" ||
		o.PublishPath != "/admin/notes/live/{room}.md" || o.PublishBody != "x {event} y" {
		t.Errorf("options %+v", o)
	}
	// --rooms and --token given: the file's names and token are not taken.
	o, err = parse("--connections", "30", "--rooms", "5", "--token", "flag", "--auth", "query").options()
	if err != nil {
		t.Fatal(err)
	}
	if o.Rooms != 5 || o.RoomNames != nil || o.Token != "flag" || o.Auth != "query" {
		t.Errorf("flags over the file: %+v", o)
	}
	// More rooms named than connections: one clear line.
	if _, err := parse("--connections", "2").options(); err == nil || !strings.Contains(err.Error(), "--rooms 3: want 1 to --connections (2)") {
		t.Errorf("3 rooms for 2 connections: %v", err)
	}
	t.Setenv("PROBE_TEST_WS_TOKEN", "")
	fs := flag.NewFlagSet("ws", flag.ContinueOnError)
	if err := newWSCommand(fs).fromFile(file); err == nil || err.Error() != "--file probe.json: ws.tokenEnv: $PROBE_TEST_WS_TOKEN is empty or not set" {
		t.Errorf("an empty token variable: %v", err)
	}
}
