package probes

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/h1/h1test"
)

// BenchmarkClosedLoop is the engine's per-request path: one client sending
// back to back to a loopback server, each reply checked and recorded as a
// measured request. Its ns/op includes the server's share of the round trip.
func BenchmarkClosedLoop(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	c := NewClient(&Target{URL: u}, 0)
	defer c.Close()
	measureGETs(b, c)
}

// rawServer answers every request with the same 100-byte reply as soon as
// its header block ends, allocating nothing per request: the allocations a
// benchmark reports are then the client's alone.
func rawServer(b *testing.B) *url.URL {
	reply := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n" +
		string(bytes.Repeat([]byte("x"), 99)) + "\n")
	return &url.URL{Scheme: "http", Host: h1test.Canned(b, reply)}
}

// BenchmarkClosedLoopClientOnly is BenchmarkClosedLoop against rawServer:
// its allocs/op are the engine's per-request allocations (0 is the aim),
// its ns/op the round trip with a server that does nearly nothing.
func BenchmarkClosedLoopClientOnly(b *testing.B) {
	c := NewClient(&Target{URL: rawServer(b)}, 0)
	defer c.Close()
	measureGETs(b, c)
}

// BenchmarkSecondTally is what the per-second series adds to each measured
// request: a second's index, two counters and one coarse histogram record.
func BenchmarkSecondTally(b *testing.B) {
	from := time.Now()
	t := newSecondTally(newPerSecond(), from, time.Hour)
	done := from
	b.ReportAllocs()
	for b.Loop() {
		done = done.Add(10 * time.Microsecond) // a new second every 100,000 requests
		t.record(done, 3*time.Millisecond, false)
	}
}

// cannedTransport answers every request at once with the same 100-byte
// reply, as if read from a socket: no I/O and no scheduler.
type cannedTransport struct{ body []byte }

func (t *cannedTransport) Do(req *h1.Request, resp *h1.Response) error {
	return t.DoAt(time.Time{}, req, resp)
}

func (t *cannedTransport) DoAt(_ time.Time, _ *h1.Request, resp *h1.Response) error {
	resp.Status, resp.Body, resp.WireBytes = 200, append(resp.Body[:0], t.body...), 70+len(t.body)
	return nil
}

func (t *cannedTransport) Decode(r io.Reader) ([]byte, error) { return io.ReadAll(r) }
func (t *cannedTransport) Interrupt()                         {}
func (t *cannedTransport) Close()                             {}
func (t *cannedTransport) Counts() (opened, dropped int)      { return 1, 0 }

// BenchmarkClientWork is what probe does for a measured request beside
// the socket's reads and writes and the scheduler: the clock, the reply's
// digest and cached verdict, and the records. bench/loadgen.sh measures
// the whole; this is the part of it that is probe's own code.
func BenchmarkClientWork(b *testing.B) {
	u, _ := url.Parse("http://127.0.0.1:1")
	c := NewClient(&Target{URL: u}, 0)
	c.conn = &cannedTransport{body: bytes.Repeat([]byte("x"), 100)}
	measureGETs(b, c)
}

// measureGETs is the benchmark's loop: c sends GET / back to back, each
// reply checked and recorded as a measured request.
func measureGETs(b *testing.B, c *Client) {
	c.measuring.Store(true)
	call := Call{Op: "GET /", Key: "/", Req: h1.NewRequest("GET", "/", nil)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.do(call, time.Time{}, false); err != nil {
			b.Fatal(err)
		}
	}
}
