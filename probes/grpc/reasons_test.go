package grpc

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h2/h2ctest"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/result"
)

// word is n in base 26, as letters: a distinct word for each n.
func word(n int64) string {
	s := ""
	for {
		s = string(rune('a'+n%26)) + s
		if n /= 26; n == 0 {
			return s
		}
	}
}

// A gRPC server whose every error carries the request's own id (and, for
// half of them, a distinct word no fold can merge): the run keeps the ids
// folded into one reason, at most MaxReasons of the others and the rest
// counted together; every error is counted.
func TestGRPCErrorsWithRequestIDsAreFoldedAndCapped(t *testing.T) {
	proto := writeProto(t, "kv.proto", `syntax = "proto3";
package kv;
message Ask { string key = 1; }
message Item { string value = 1; }
service KV { rpc Get(Ask) returns (Item); }
`)
	var n, words atomic.Int64
	u := h2ctest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	}), false).URL
	run, err := probes.RunLoad(context.Background(), &GRPC{Method: "kv.KV/Get", Data: `{"key": "x"}`, Proto: []string{proto}},
		&probes.Target{URL: u, HTTP2: &probes.HTTP2{}}, probes.LoadOptions{Concurrency: 2, Duration: time.Second})
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
	if len(run.Errors) > result.MaxReasons+2 { // 100 words, their other reasons, the ids' one reason
		t.Errorf("%d distinct reasons from %d errors", len(run.Errors), errs)
	}
	if ids < errs/2-2 {
		t.Errorf("the id-carrying errors folded into %d of %d: %v", ids, errs, run.ErrorReasons()[:3])
	}
	if words.Load() > 2*result.MaxReasons && run.Errors[result.OtherReasons(run.Ops[0].Name)] == 0 {
		t.Errorf("%d distinct words sent, no other reasons: %d reasons", words.Load(), len(run.Errors))
	}
}
