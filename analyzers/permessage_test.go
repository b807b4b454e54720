package analyzers

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/probehq/probe/fixtures/notespb"
	"github.com/probehq/probe/internal/testservers/notesstream"
)

// The tests in this file take real CPU profiles of a grpc-go server in the
// test process whose server-streaming methods are this package's code.

// scanningNotes walks every item on every call for the few whose id holds
// the asked tag's digits, then sends those: a scan of the data, per call.
type scanningNotes struct {
	notespb.UnimplementedNotesServer
}

func (scanningNotes) List(req *notespb.ListRequest, stream grpc.ServerStreamingServer[notespb.Note]) error {
	var hits []string
	for round := 0; round < 8; round++ {
		hits = matchItems(req.GetTag())
	}
	for _, h := range hits[:min(len(hits), 3)] {
		if err := stream.Send(&notespb.Note{Path: h}); err != nil {
			return err
		}
	}
	return nil
}

func matchItems(want string) []string {
	var hits []string
	for _, id := range notesstream.Items {
		if notesstream.Readers[id]["bob"] && strings.Contains(id, want) {
			hits = append(hits, id)
		}
	}
	return hits
}

// serveNotes serves notes (the fixture's generated service, grpc-go's
// stubs calling it) and returns its address.
func serveNotes(t *testing.T, notes notespb.NotesServer) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(notesstream.Serve(l, notes).Stop)
	return l.Addr().String()
}

// streamAndProfile calls List with req from two clients, reading each
// stream to its end, for d (and on until the process used enough CPU),
// and returns the CPU profile and the messages a call got.
func streamAndProfile(t *testing.T, addr string, req *notespb.ListRequest, d time.Duration) (*profile.Profile, int) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := notespb.NewNotesClient(conn)
	var mu sync.Mutex
	msgs := 0
	p := profileWhile(t, d, 2, func(done func() bool) {
		for !done() {
			s, err := client.List(context.Background(), req)
			n := 0
			for err == nil {
				if _, err = s.Recv(); err == nil {
					n++
				}
			}
			if err != io.EOF {
				t.Error(err)
				return
			}
			mu.Lock()
			msgs = n
			mu.Unlock()
		}
	})
	return p, msgs
}

// A server stream's per-result callback — a reader check of map lookups, a
// cursor encode, the send — is work per message sent, never a scan; a
// stream handler that walks all its data on every call is still a scan.
func TestAStreamsSendLoopIsPerMessageWork(t *testing.T) {
	p, n := streamAndProfile(t, serveNotes(t, notesstream.PerMessage{}), &notespb.ListRequest{Limit: 200}, 2*time.Second)
	if n < 100 {
		t.Fatalf("List sent %d messages a call, want over 100", n)
	}
	fs := Analyze(p, nil, Evidence{Endpoint: "grpc feed.Feed/List"}, DefaultRules()).Findings
	if f := find(fs, "per-request-full-scan"); f != nil {
		t.Errorf("List: a per-request-full-scan at %s: %s", f.OwnFrame, f.Evidence)
	}
	f := find(fs, "per-message-work")
	if f == nil {
		t.Fatalf("List: no per-message-work among %s", rules(fs))
	}
	if !strings.Contains(f.OwnFrame, "notesstream.PerMessage.List.func1") || f.Class != "info" ||
		!strings.Contains(f.Evidence, "per message sent: ") || !strings.Contains(f.Evidence, "EncodeCursor") ||
		!strings.Contains(f.Evidence, "sending the message") {
		t.Errorf("List: per-message-work at %s, class %s: %s; want the callback, its cursor encode and its send", f.OwnFrame, f.Class, f.Evidence)
	}
	checkFocus(t, "List", f, p, `notesstream\.PerMessage\.List\.func1$`)
	for _, u := range Analyze(p, nil, Evidence{Endpoint: "grpc probe.fixture.Notes/List"}, DefaultRules()).Unexplained {
		if strings.Contains(strings.Join(u.Path, " "), "notesstream.PerMessage.List.func1") {
			t.Errorf("List: unexplained under the callback per-message-work names: %+v", u)
		}
	}

	p, _ = streamAndProfile(t, serveNotes(t, scanningNotes{}), &notespb.ListRequest{Tag: "7"}, 2*time.Second)
	fs = Analyze(p, nil, Evidence{Endpoint: "grpc feed.Feed/Scan"}, DefaultRules()).Findings
	scan := find(fs, "per-request-full-scan")
	if scan == nil || !strings.HasSuffix(scan.OwnFrame, "matchItems") {
		t.Fatalf("Scan: want a per-request-full-scan at matchItems: %s", rules(fs))
	}
	checkFocus(t, "Scan", scan, p, `matchItems$`)
	if f := find(fs, "per-message-work"); f != nil && f.CPUShare >= scan.CPUShare {
		t.Errorf("Scan: per-message-work %.0f%% over the scan's %.0f%%: %s", 100*f.CPUShare, 100*scan.CPUShare, f.Evidence)
	}
}
