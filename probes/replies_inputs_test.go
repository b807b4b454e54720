package probes

import (
	"slices"
	"testing"

	"github.com/probehq/probe/lib/h1"
)

// The inputs of a request are every header field a server may key its work
// on, not framing nor the client's name; a key whose requests carried
// another value of one has it varied.
func TestInputHeaders(t *testing.T) {
	r := h1.NewRequest("GET", "/", nil, h1.Field{Name: "User-Agent", Value: UserAgent}, h1.Field{Name: "Accept-Encoding", Value: "gzip"},
		h1.Field{Name: "Accept-Language", Value: "en"}, h1.Field{Name: "Cookie", Value: "user=ann"},
		h1.Field{Name: "Content-Type", Value: "application/grpc"},
		h1.Field{Name: "Te", Value: "trailers"}, h1.Field{Name: "grpc-timeout", Value: "1S"}, h1.Field{Name: "x-user", Value: "ann"},
		h1.Field{Name: "Mcp-Session-Id", Value: "s1"}, h1.Field{Name: "Accept", Value: "application/json"})
	if got := InputHeaders(r); !slices.Equal(got, []string{"Accept-Language", "Cookie", "x-user"}) {
		t.Errorf("input headers %v", got)
	}
	k := &keyReplies{headers: InputHeaders(r), first: r}
	k.noteHeaders(r)
	same := h1.NewRequest("GET", "/", nil, r.Header...)
	k.noteHeaders(same)
	if len(k.varied) != 0 {
		t.Errorf("the same values, varied %v", k.varied)
	}
	other := h1.NewRequest("GET", "/", nil, h1.Field{Name: "Accept-Language", Value: "en"}, h1.Field{Name: "Cookie", Value: "user=bob"},
		h1.Field{Name: "x-user", Value: "ann"})
	k.noteHeaders(other)
	if !slices.Equal(k.varied, []string{"Cookie"}) {
		t.Errorf("another cookie, varied %v", k.varied)
	}
}
