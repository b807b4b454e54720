package e2e

import (
	"testing"

	"github.com/probehq/probe/internal/cli/clitest"
)

// noteBody is an event as a note's Markdown: tagged with its room, the
// marker in its text, which the fixture's live update carries.
const noteBody = "---\ntitle: live {room}\ntags: [{room}]\n---\nThe event {event} as a note.\n"

// TestWSByNoteWrites: probe ws publishes by writing notes (PUT
// /admin/notes/…), and the fixture's live updates deliver each write to
// the readers of its tag's room (tag:NAME), once, and to no other room;
// the rooms and the publishing as flags, then as the target file's ws
// object; a file's unknown auth is one line.
func TestWSByNoteWrites(t *testing.T) {
	common := []string{"--fixture-mode", "load-time", "--notes", "200", "--events", "3", "--rounds", "2", "--pause", "200ms"}
	code, stderr, d := wsReport(t, append(common, "--connections", "30", "--rooms", "3", "--ws-path", "/ws?room=tag:{room}",
		"--publish-method", "PUT", "--publish-path", "/admin/notes/live/{room}.md", "--publish-body", noteBody)...)
	if code != exitOK || d == nil || d.Failed() || d.Totals.Expected != 180 || d.Totals.Delivered != 180 || d.Totals.Misrouted != 0 {
		t.Fatalf("flags: exit %d, report %+v\n%s", code, d, stderr)
	}

	file := clitest.WriteFile(t, "probe.json", `{"ws": {"path": "/ws?room=tag:{room}", "rooms": ["alpha", "beta"], "publishMethod": "PUT",
	  "publishPath": "/admin/notes/live/{room}.md", "publishBody": "---\ntitle: live {room}\ntags: [{room}]\n---\nThe event {event}.\n"}}`)
	code, stderr, d = wsReport(t, append(common, "--connections", "20", "--file", file)...)
	if code != exitOK || d == nil || d.Failed() || d.Config.Rooms != 2 || d.Totals.Expected != 120 || d.Totals.Delivered != 120 {
		t.Fatalf("file: exit %d, report %+v\n%s", code, d, stderr)
	}
	if len(d.Rooms) != 2 || d.Rooms[0].Room != "alpha" || d.Rooms[1].Room != "beta" || d.Rooms[1].Delivered != 60 {
		t.Errorf("rooms %+v, want alpha and beta, 60 deliveries each", d.Rooms)
	}

	bad := clitest.WriteFile(t, "bad.json", `{"ws": {"auth": "cookie"}}`)
	probeCmd.BadInput(t, []string{"ws", "--file", bad}, exitUsage, `ws.auth: "cookie" is no way to send the token`)
	probeCmd.BadInput(t, []string{"ws", "--publish-method", "GET"}, exitUsage, `--publish-method "GET": want POST, PUT or PATCH`)
}
