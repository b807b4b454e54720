package fuzz

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"

	"github.com/probehq/probe/lib/redirect/redirecttest"
)

// A target that answers 307 to another address (another port of
// 127.0.0.1: another origin): the fuzzer's input gets the 307 as its
// reply, the start-up check takes it as an answer, and the other address
// gets no request (no header of the user's, no input).
func TestFuzzerFollowsNoRedirect(t *testing.T) {
	other, _ := redirecttest.Elsewhere(t)
	srv := redirecttest.Mover(t, other)
	tmpl, err := NewTemplate("POST", "/x/{str}", nil, `{"s": {str}}`)
	if err != nil {
		t.Fatal(err)
	}
	f := &fuzzer{o: Options{Templates: []*Template{tmpl}, Timeout: 5 * time.Second,
		Header: http.Header{"Authorization": {"Bearer token"}, "X-Api-Key": {"key"}}}}
	child := &target.Child{URL: srv.String()}
	status, _, _, _, err := f.send(context.Background(), newHTTPClient(1), child, nil, result.FuzzInput{Values: []string{"a", "b"}})
	if err != nil || status != http.StatusTemporaryRedirect {
		t.Fatalf("status %d, err %v: want the 307 as the input's reply", status, err)
	}
	if err := answers(context.Background(), child, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}
