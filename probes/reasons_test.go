package probes

import (
	"fmt"
	"strings"
	"testing"

	"github.com/probehq/probe/result"
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
	pastCap := r.M[result.OtherReasons("GET /a")]
	if a != result.MaxReasons+1 || pastCap != 1000-result.MaxReasons || total != 1000+2000+5 || r.M["timeout"] != 5 {
		t.Errorf("GET /a: %d reasons, %d other, total %d", a, pastCap, total)
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
	if kept != result.MaxReasons+1 || sum != 3005+1500 {
		t.Errorf("merged: %d reasons of GET /a, %d errors", kept, sum)
	}
	// A tally from elsewhere (a shard's report.json) is capped by op.
	loose := map[string]int64{"timeout": 1}
	for i := range int64(300) {
		loose["GET /a: x "+word(i)] = i + 1
	}
	capped := result.CapReasons(loose, []string{"GET /", "GET /a"})
	if len(capped) != result.MaxReasons+2 || capped["timeout"] != 1 || capped["GET /a: x "+word(299)] != 300 ||
		capped[result.OtherReasons("GET /a")] != 200*201/2 {
		t.Errorf("capped: %d reasons, other %d", len(capped), capped[result.OtherReasons("GET /a")])
	}
}
