// grpcstream is a gRPC server for probe's e2e tests: the notes service of
// internal/testservers/notesstream (a per-result callback for limit items,
// a watch for the tag "watch"), with net/http/pprof on the same port (h2c).
package main

import (
	"flag"
	"log"
	"net/http"
	_ "net/http/pprof"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"

	"github.com/probehq/probe/fixtures/notespb"
	"github.com/probehq/probe/internal/testservers/notesstream"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50061", "listen address")
	flag.Parse()
	srv := grpc.NewServer()
	notespb.RegisterNotesServer(srv, notesstream.PerMessage{})
	reflection.Register(srv)
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			srv.ServeHTTP(w, r)
			return
		}
		http.DefaultServeMux.ServeHTTP(w, r)
	})
	log.Fatal((&http.Server{Addr: *addr, Handler: h, Protocols: &protos}).ListenAndServe())
}
