package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/probehq/probe/fixtures"
	"github.com/probehq/probe/fixtures/site"
	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/internal/cli/shared"
)

// serveFixture runs the fixture in this process on a free loopback port,
// as `probe fixture serve` would: its URL.
func serveFixture(t *testing.T, mode site.Mode) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- fixtures.Serve(ctx, fixtures.ServeOptions{Addr: "127.0.0.1:0", Notes: 60, Synthetic: true, Mode: mode,
			Stdout: pw, Stderr: io.Discard})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("fixture: %v (%v)", err, <-done)
	}
	go io.Copy(io.Discard, pr)
	t.Cleanup(func() { cancel(); <-done })
	return strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
}

// The fixture started by hand and given by URL announces its note queries;
// notequery finds the endpoint by what the pages say and asks the fixture's
// own queries, cleanly, in both modes.
func TestNoteQueryFindsTheFixtureByURL(t *testing.T) {
	for _, mode := range []site.Mode{site.PerRequest, site.LoadTime} {
		url := serveFixture(t, mode)
		out := t.TempDir()
		code, _, stderr := probeCmd.Run(t, context.Background(), "notequery", "--target", url, "--duration", "500ms",
			"--warmup", "0", "--concurrency", "2", "--out", out)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", mode, code, stderr)
		}
		rep := clitest.ReadReport(t, out)
		rows := map[string]bool{}
		for _, op := range rep.Operations {
			rows[op.Op] = true
		}
		if rep.Latency.Requests == 0 || rep.Latency.Errors != 0 || rep.Failed() {
			t.Errorf("%s: %d requests, %d errors %v", mode, rep.Latency.Requests, rep.Latency.Errors, rep.Errors)
		}
		for _, q := range shared.FixtureNoteQueries {
			if !rows["POST /query "+q.Name] {
				t.Errorf("%s: rows %v lack the fixture's %q", mode, rows, q.Name)
			}
		}
	}
}

// The announcement is the same bytes in both modes, on the home page and
// every page, and the description it links is JSON naming /query.
func TestFixtureAnnouncesItsNoteQueries(t *testing.T) {
	var descs []string
	for _, mode := range []site.Mode{site.PerRequest, site.LoadTime} {
		url := serveFixture(t, mode)
		home := httpGet(t, url+"/")
		_, rest, ok := strings.Cut(home, `<li><a href="`)
		note, _, _ := strings.Cut(rest, `"`)
		if !ok || !strings.HasPrefix(note, "/") {
			t.Fatalf("%s: the home page lists no note: %.300s", mode, home)
		}
		for _, page := range []string{"/", note} {
			body := httpGet(t, url+page)
			if !strings.Contains(body, `<link rel="service-desc" type="application/json" href="/.well-known/note-query.json">`) {
				t.Errorf("%s %s: no service-desc link in %.300s", mode, page, body)
			}
		}
		desc := httpGet(t, url+"/.well-known/note-query.json")
		var doc struct{ Endpoint, Profile string }
		if err := json.Unmarshal([]byte(desc), &doc); err != nil || doc.Endpoint != shared.FixtureQueryPath || doc.Profile != site.NoteQueryProfile {
			t.Errorf("%s: description %q: %v", mode, desc, err)
		}
		descs = append(descs, desc)
	}
	if descs[0] != descs[1] {
		t.Errorf("the description differs between the modes:\n%s\n%s", descs[0], descs[1])
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, b := clitest.Get(t, http.DefaultClient, url)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return string(b)
}
