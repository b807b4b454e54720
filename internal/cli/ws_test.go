package cli

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/probehq/probe/internal/cli/sessions"
	"github.com/probehq/probe/internal/cli/shared"
)

// The target file's ws settings fill the flags not given; a flag given
// wins; the file's rooms name the rooms, connection i joining rooms[i mod
// len(rooms)].
func TestWSOptionsFromFile(t *testing.T) {
	file, err := shared.ParseTargetFile("probe.json", []byte(`{"ws": {"path": "/live?room={room}", "auth": "header",
	  "tokenEnv": "PROBE_TEST_WS_TOKEN", "ready": "", "rooms": ["tag:a", "tag:b", "feed:c"],
	  "publishPath": "/admin/notes/live/{room}.md", "publishBody": "{event}", "publishMethod": "PUT"}}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PROBE_TEST_WS_TOKEN", "s3cret")
	parse := func(args ...string) *sessions.WS {
		c := parseWS(t, args...)
		if err := c.FromFile(file); err != nil {
			t.Fatal(err)
		}
		return c
	}
	o, err := parse("--connections", "30", "--publish-body", "x {event} y").Options()
	if err != nil {
		t.Fatal(err)
	}
	if o.Path != "/live?room={room}" || o.Auth != "header" || o.Token != "s3cret" || o.Ready != "" || o.Rooms != 3 ||
		strings.Join(o.RoomNames, ",") != "tag:a,tag:b,feed:c" || o.PublishMethod != "PUT" ||
		o.PublishPath != "/admin/notes/live/{room}.md" || o.PublishBody != "x {event} y" {
		t.Errorf("options %+v", o)
	}
	// --rooms and --token given: the file's names and token are not taken.
	o, err = parse("--connections", "30", "--rooms", "5", "--token", "flag", "--auth", "query").Options()
	if err != nil {
		t.Fatal(err)
	}
	if o.Rooms != 5 || o.RoomNames != nil || o.Token != "flag" || o.Auth != "query" {
		t.Errorf("flags over the file: %+v", o)
	}
	// More rooms named than connections: one clear line.
	if _, err := parse("--connections", "2").Options(); err == nil || !strings.Contains(err.Error(),
		"--rooms 3: want 1 to --connections (2)") {
		t.Errorf("3 rooms for 2 connections: %v", err)
	}
	t.Setenv("PROBE_TEST_WS_TOKEN", "")
	fs := flag.NewFlagSet("ws", flag.ContinueOnError)
	if err := sessions.NewWS(fs).FromFile(file); err == nil || err.Error() != "--file probe.json: ws.tokenEnv: "+
		"$PROBE_TEST_WS_TOKEN is empty or not set" {
		t.Errorf("an empty token variable: %v", err)
	}
}

// --experiment-room reaches the options (and may not be a room of the
// run); a publish path and body without {room} is warned of.
func TestWSExperimentRoomAndTheRoomlessWarning(t *testing.T) {
	parse := func(args ...string) *sessions.WS { return parseWS(t, args...) }
	o, err := parse("--experiment-room", "idle-user", "--publish-path", "/message", "--publish-body", `{"message":"{event}"}`).Options()
	if err != nil {
		t.Fatal(err)
	}
	if o.ExperimentRoom != "idle-user" || !o.RoomlessPublish() {
		t.Errorf("options %+v", o)
	}
	w := sessions.RoomlessWarning(o)
	if w.Kind != "publish-without-room" || !strings.Contains(w.Message, "neither --publish-path (/message) nor "+
		"--publish-body holds {room}") ||
		!strings.Contains(w.Message, "the 10 rooms are one") {
		t.Errorf("warning %+v", w)
	}
	if o, _ := parse().Options(); o.RoomlessPublish() {
		t.Error("the default publish body names the room")
	}
	if _, err := parse("--experiment-room", "r3").Options(); err == nil || !strings.Contains(err.Error(),
		`--experiment-room "r3" is room 3 of the run`) {
		t.Errorf("a room of the run as the empty room: %v", err)
	}
}

// parseWS is probe ws's command parsed from args.
func parseWS(t *testing.T, args ...string) *sessions.WS {
	t.Helper()
	fs := flag.NewFlagSet("ws", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := sessions.NewWS(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return c
}
