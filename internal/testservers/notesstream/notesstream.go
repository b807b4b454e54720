// Package notesstream is a gRPC notes service of server streams for
// probe's tests, real code whose CPU profiles the analyzers read: List
// sends, for each of the first limit items the caller may read, a page
// cursor (a per-result callback: a reader check of map lookups, a cursor
// encode, the send); for the tag "watch" it never ends, one message every
// 20 ms until the call does.
package notesstream

import (
	"net"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"

	"github.com/probehq/probe/fixtures/notespb"
)

// Items are the store's ids; Readers who may read each.
var Items, Readers = func() ([]string, map[string]map[string]bool) {
	items := make([]string, 4000)
	readers := map[string]map[string]bool{}
	for i := range items {
		items[i] = "item-" + strconv.Itoa(i*7919)
		readers[items[i]] = map[string]bool{"alice": i%3 != 0, "bob": true, "team:" + strconv.Itoa(i%17): true}
	}
	return items, readers
}()

// EachItem calls fn for the first n items, in order, until it fails.
func EachItem(n int, fn func(i int, id string) error) error {
	for i, id := range Items[:min(n, len(Items))] {
		if err := fn(i, id); err != nil {
			return err
		}
	}
	return nil
}

// EncodeCursor is a page cursor for item i: its id and position, hex by
// hand, several times over (a cursor with a checksum of its parts).
func EncodeCursor(i int, id string) string {
	var b strings.Builder
	for round := 0; round < 24; round++ {
		for _, c := range []byte(id) {
			b.WriteByte("0123456789abcdef"[(int(c)+i+round)&15])
		}
		b.WriteString(strconv.Itoa(i + round))
	}
	return b.String()
}

// PerMessage is the service whose List works per message sent.
type PerMessage struct {
	notespb.UnimplementedNotesServer
}

func (PerMessage) List(req *notespb.ListRequest, stream grpc.ServerStreamingServer[notespb.Note]) error {
	if req.GetTag() == "watch" {
		return Watch(stream)
	}
	return EachItem(int(req.GetLimit()), func(i int, id string) error {
		allowed := false
		for _, who := range []string{"alice", "bob", "team:3", "team:5", "carol", "dave"} {
			for k := 0; k < 12; k++ {
				if Readers[id][who] {
					allowed = true
				}
			}
		}
		if !allowed {
			return nil
		}
		return stream.Send(&notespb.Note{Path: EncodeCursor(i, id)})
	})
}

// Watch sends a message every 20 ms until the call ends.
func Watch(stream grpc.ServerStreamingServer[notespb.Note]) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stream.Context().Done():
			return stream.Context().Err()
		case <-tick.C:
			if err := stream.Send(&notespb.Note{Path: "/event"}); err != nil {
				return err
			}
		}
	}
}

// Serve serves notes on l, with reflection, until the server stops.
func Serve(l net.Listener, notes notespb.NotesServer) *grpc.Server {
	srv := grpc.NewServer()
	notespb.RegisterNotesServer(srv, notes)
	reflection.Register(srv)
	go srv.Serve(l)
	return srv
}
