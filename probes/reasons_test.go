package probes

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestFoldReason(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"connection refused", "connection refused"},
		{"HTTP status 503", "HTTP status 503"},
		{"grpc-status 13: request 8f14e45f-ceea-467f-a8dd-cbd5e1b7f8c3 failed", "grpc-status 13: request <id> failed"},
		{"req-8f14e45f: no such key", "req-<id>: no such key"},
		{"trace=DEADBEEF01 user 12", "trace=<id> user 12"},
		{"order 12345678 not found", "order N not found"},
		{"order 1234567 not found", "order N not found"},
		{"read tcp 127.0.0.1:54321->127.0.0.1:8080: broken pipe", "read tcp 127.0.0.1:N->127.0.0.1:N: broken pipe"},
		{"token AbC9xyZ2qwPL7 expired", "token <id> expired"},
		{"reply of 20480 bytes", "reply of N bytes"},
		{"ERR_HTTP2_PROTOCOL_ERROR", "ERR_HTTP2_PROTOCOL_ERROR"},
		{"utf8 héllo 42", "utf8 héllo 42"},
	} {
		if got := FoldReason(tc.in); got != tc.want {
			t.Errorf("FoldReason(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if again := FoldReason(FoldReason(tc.in)); again != FoldReason(tc.in) {
			t.Errorf("folding %q twice: %q", tc.in, again)
		}
	}
}

// word is n in the letters a–z: a distinct reason with no digit to fold.
func word(n int64) string {
	s := ""
	for {
		s = string(rune('a'+n%26)) + s
		if n /= 26; n == 0 {
			return s
		}
	}
}

func TestReasonsKeepAtMostMaxAnOperationAndEveryCount(t *testing.T) {
	r := NewReasons(nil)
	for i := range int64(1000) {
		r.Add("GET /a", "shard "+word(i)+" is read-only", 1)
		r.Add("GET /b", fmt.Sprintf("request %d-%x", i, uint64(i)*0x9e3779b97f4a7c15), 2)
	}
	r.Add("", "timeout", 5)
	var a, b, total int64
	for k, n := range r.M {
		total += n
		switch {
		case strings.HasPrefix(k, "GET /a: "):
			a++
		case strings.HasPrefix(k, "GET /b: "):
			b++
		}
	}
	if a != MaxReasons+1 || r.M[OtherReasons("GET /a")] != 1000-MaxReasons || total != 1000+2000+5 || r.M["timeout"] != 5 {
		t.Errorf("GET /a: %d reasons, %d other, total %d", a, r.M[OtherReasons("GET /a")], total)
	}
	// A word of a number and a long hex one is an id: one reason.
	if b > 3 || r.M["GET /b: request <id>"] < 2*990 {
		t.Errorf("GET /b: %d reasons: %v", b, r.M)
	}
	// Merged (clients into the run), the cap holds, the count exact.
	run := NewReasons(nil)
	run.AddAll(r)
	other := NewReasons(nil)
	for i := range int64(500) {
		other.Add("GET /a", "shard "+word(5000+i)+" gone", 3)
	}
	run.AddAll(other)
	var kept, sum int64
	for k, n := range run.M {
		sum += n
		if strings.HasPrefix(k, "GET /a: ") {
			kept++
		}
	}
	if kept != MaxReasons+1 || sum != 3005+1500 {
		t.Errorf("merged: %d reasons of GET /a, %d errors", kept, sum)
	}
	// A tally from elsewhere (a shard's report.json) is capped by op.
	loose := map[string]int64{"timeout": 1}
	for i := range int64(300) {
		loose["GET /a: x "+word(i)] = i + 1
	}
	capped := CapReasons(loose, []string{"GET /", "GET /a"})
	if len(capped) != MaxReasons+2 || capped["timeout"] != 1 || capped["GET /a: x "+word(299)] != 300 ||
		capped[OtherReasons("GET /a")] != 200*201/2 {
		t.Errorf("capped: %d reasons, other %d", len(capped), capped[OtherReasons("GET /a")])
	}
}

// A gRPC server whose every error carries the request's own id (and, for
// half of them, a distinct word no fold can merge): the run keeps the ids
// folded into one reason, at most MaxReasons of the others and the rest
// counted together; every error is counted.
func TestGRPCErrorsWithRequestIDsAreFoldedAndCapped(t *testing.T) {
	dir := t.TempDir()
	proto := filepath.Join(dir, "kv.proto")
	if err := os.WriteFile(proto, []byte(`syntax = "proto3";
package kv;
message Ask { string key = 1; }
message Item { string value = 1; }
service KV { rpc Get(Ask) returns (Item); }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var n, words atomic.Int64
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	srv := &http.Server{Protocols: &protos, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
		w.WriteHeader(200)
		i := n.Add(1)
		w.Header().Set("Grpc-Status", "13")
		if i%2 == 0 {
			id := fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", i*7919, i%65536, i%4096, i%4096, i*104729)
			w.Header().Set("Grpc-Message", "request "+id+" failed")
			return
		}
		words.Add(1)
		w.Header().Set("Grpc-Message", "shard "+word(i)+" is read-only")
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	u, _ := url.Parse("http://" + l.Addr().String())
	run, err := RunLoad(context.Background(), &GRPC{Method: "kv.KV/Get", Data: `{"key": "x"}`, Proto: []string{proto}},
		&Target{URL: u, HTTP2: &HTTP2{}}, LoadOptions{Concurrency: 2, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	calls, errs := run.Requests()
	var tallied, ids int64
	for k, c := range run.Errors {
		tallied += c
		if strings.Contains(k, "request <id> failed") {
			ids += c
		}
	}
	if calls == 0 || errs != calls || tallied < errs {
		t.Fatalf("%d calls, %d errors, %d tallied", calls, errs, tallied)
	}
	if len(run.Errors) > MaxReasons+2 { // 100 words, their other reasons, the ids' one reason
		t.Errorf("%d distinct reasons from %d errors", len(run.Errors), errs)
	}
	if ids < errs/2-2 {
		t.Errorf("the id-carrying errors folded into %d of %d: %v", ids, errs, run.ErrorReasons()[:3])
	}
	if words.Load() > 2*MaxReasons && run.Errors[OtherReasons(run.Ops[0].Name)] == 0 {
		t.Errorf("%d distinct words sent, no other reasons: %d reasons", words.Load(), len(run.Errors))
	}
}
