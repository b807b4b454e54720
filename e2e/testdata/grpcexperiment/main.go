// Command grpcexperiment is the e2e test's gRPC server for probe's
// experiment: the fixture's notes service (probe.fixture.Notes), whose
// Search sorts 20,000 numbers on every call. In -mode constant they are
// the same numbers whatever the call carries (a true load-time positive:
// one reply for every query); in -mode metadata, the trap, they are the
// numbers of the user the call's x-user metadata names, a list of the
// same size for every user, each user's own reply, and a call without
// x-user is refused (Unauthenticated); in -mode field, the other trap,
// they are the numbers of the user the message's query field names (a
// list of the same size for each, each its own reply; any other query is
// NotFound). gRPC is served over h2c on -addr,
// /debug/pprof/ on -pprof.
package main

import (
	"context"
	"flag"
	"log"
	"net/http"
	_ "net/http/pprof"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/probehq/probe/fixtures/notespb"
	"github.com/probehq/probe/internal/testservers/inputs"
)

type notes struct {
	notespb.UnimplementedNotesServer
	mode     string
	constant []int
	users    map[string][]int
}

func (n *notes) Search(ctx context.Context, r *notespb.SearchRequest) (*notespb.SearchReply, error) {
	stored := n.constant
	switch n.mode {
	case "field":
		if stored = n.users[r.Query]; stored == nil {
			return nil, status.Error(codes.NotFound, "no such user: "+r.Query)
		}
	case "metadata":
		md, _ := metadata.FromIncomingContext(ctx)
		user := strings.Join(md.Get("x-user"), "")
		if stored = n.users[user]; stored == nil {
			return nil, status.Error(codes.Unauthenticated, "no such user: send x-user")
		}
	}
	nums := inputs.SortedOf(stored)
	return &notespb.SearchReply{Total: uint64(nums[len(nums)/2]),
		Hits: []*notespb.Hit{{Path: "/smallest", Score: float64(nums[0])}, {Path: "/largest", Score: float64(nums[len(nums)-1])}}}, nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "gRPC's listen address (h2c)")
	pprofAddr := flag.String("pprof", "127.0.0.1:8081", "the profiles' listen address")
	mode := flag.String("mode", "constant", "constant, metadata or field")
	flag.Parse()
	srv := grpc.NewServer()
	notespb.RegisterNotesServer(srv, &notes{mode: *mode, constant: inputs.UsersNumbers(1),
		users: map[string][]int{"ann": inputs.UsersNumbers(2), "bob": inputs.UsersNumbers(3), "cy": inputs.UsersNumbers(4)}})
	reflection.Register(srv)
	go func() { log.Fatal(http.ListenAndServe(*pprofAddr, nil)) }()
	h := &http.Server{Addr: *addr, Handler: srv, Protocols: new(http.Protocols)}
	h.Protocols.SetUnencryptedHTTP2(true)
	log.Fatal(h.ListenAndServe())
}
