package h2

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/h1/h1test"
)

// Bodies larger than every window, both ways: a 300 KiB request body
// against the server's 64 KiB initial window (probe waits for its
// WINDOW_UPDATEs), and 5 MiB replies against probe's 1 MiB stream window
// (probe gives credit back as it reads), four clients on one connection.
func TestBodiesLargerThanTheWindows(t *testing.T) {
	addr, conns := h2cServer(t, func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		sum := sha256.Sum256(in)
		w.Write(sum[:])
		w.Write(bytes.Repeat(sum[:1], 5<<20))
	})
	p := &Pool{Addr: addr, Streams: 4}
	var wg sync.WaitGroup
	for i := range 4 {
		c := p.Conn(20*time.Second, 16<<20, nil)
		defer c.Close()
		wg.Go(func() {
			var resp h1.Response
			for k := range 3 {
				in := bytes.Repeat([]byte{byte(i*3 + k)}, 300<<10)
				sum := sha256.Sum256(in)
				if err := c.Do(h1.NewRequest("POST", "/echo", in), &resp); err != nil {
					t.Errorf("client %d: %v", i, err)
					return
				}
				if len(resp.Body) != 32+5<<20 || !bytes.Equal(resp.Body[:32], sum[:]) {
					t.Errorf("client %d: a reply of %d bytes, its sum %x, want %x", i, len(resp.Body), resp.Body[:min(32, len(resp.Body))], sum)
				}
			}
		})
	}
	wg.Wait()
	if conns.Load() != 1 {
		t.Errorf("%d connections, want the one", conns.Load())
	}
}

// rawServer accepts HTTP/2 connections on loopback and runs serve on
// each, with a Framer past the client's preface.
func rawServer(t *testing.T, maxStreams uint32, serve func(fr *http2.Framer, n int)) string {
	t.Helper()
	var n atomic.Int64
	return h1test.ServeConns(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(br, preface); err != nil || string(preface) != http2.ClientPreface {
			return
		}
		fr := http2.NewFramer(c, br)
		fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: maxStreams})
		serve(fr, int(n.Add(1)))
	})
}

// nextRequest reads frames until a request's HEADERS, answering settings.
func nextRequest(fr *http2.Framer) (uint32, bool) {
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return 0, false
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			return f.StreamID, true
		}
	}
}

// headerBlock is a reply's header block, HPACK-encoded by one encoder:
// :status 200, then fields as name, value pairs.
func headerBlock(fields ...string) []byte {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	for i := 0; i+1 < len(fields); i += 2 {
		enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return b.Bytes()
}

func replyHeaders(fr *http2.Framer, id uint32, end bool, fields ...string) {
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: headerBlock(fields...), EndHeaders: true, EndStream: end})
}

// A hostile server: one whose header block decodes past 1 MiB fails the
// request; a GOAWAY before the stream was taken sends an idempotent
// request again on a new connection.
func TestHostileFrames(t *testing.T) {
	var resp h1.Response
	var c *Conn
	bigHeaders := rawServer(t, 100, func(fr *http2.Framer, _ int) {
		id, ok := nextRequest(fr)
		if !ok {
			return
		}
		var fields []string
		for range 24 { // 1.4 MiB decoded
			fields = append(fields, "x-big", strings.Repeat("x", 60<<10))
		}
		block := headerBlock(fields...)
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block[:16<<10], EndHeaders: false})
		for block = block[16<<10:]; len(block) > 0; {
			n := min(len(block), 16<<10)
			fr.WriteContinuation(id, n == len(block), block[:n])
			block = block[n:]
		}
		time.Sleep(time.Second)
	})
	c = (&Pool{Addr: bigHeaders}).Conn(5*time.Second, 0, nil)
	if err := c.Do(h1.NewRequest("GET", "/", nil), &resp); err == nil {
		t.Errorf("a header block of 1.4 MiB was taken: %d fields", len(resp.Header("X-Big")))
	}
	c.Close()

	goAway := rawServer(t, 100, func(fr *http2.Framer, n int) {
		for {
			id, ok := nextRequest(fr)
			if !ok {
				return
			}
			if n == 1 { // the first connection takes no stream
				fr.WriteGoAway(0, http2.ErrCodeNo, nil)
				time.Sleep(200 * time.Millisecond)
				return
			}
			replyHeaders(fr, id, false, "x-conn", "2")
			fr.WriteData(id, true, []byte("second"))
		}
	})
	c = (&Pool{Addr: goAway}).Conn(5*time.Second, 0, nil)
	defer c.Close()
	// The first request warms the connection; the GOAWAY comes with it.
	var closed error
	for range 3 {
		if err := c.Do(h1.NewRequest("GET", "/", nil), &resp); err == nil {
			break
		} else {
			closed = err
		}
	}
	if string(resp.Body) != "second" {
		t.Errorf("after a GOAWAY: %q (%v), want the second connection's reply", resp.Body, closed)
	}
	if closed != nil && !errors.Is(closed, h1.ErrClosed) {
		t.Errorf("a GOAWAY's failure: %v, want a closed connection", closed)
	}
}

// A server that takes one stream at a time (SETTINGS_MAX_CONCURRENT_STREAMS
// 1): eight clients on one connection wait their turn, none fails.
func TestServerStreamLimitQueues(t *testing.T) {
	var inFlight, most atomic.Int64
	addr := rawServer(t, 1, func(fr *http2.Framer, _ int) {
		var wmu sync.Mutex
		for {
			id, ok := nextRequest(fr)
			if !ok {
				return
			}
			if n := inFlight.Add(1); n > most.Load() {
				most.Store(n)
			}
			go func() {
				time.Sleep(5 * time.Millisecond)
				inFlight.Add(-1)
				wmu.Lock()
				replyHeaders(fr, id, false)
				fr.WriteData(id, true, []byte("ok"))
				wmu.Unlock()
			}()
		}
	})
	p := &Pool{Addr: addr, Streams: 8}
	var wg sync.WaitGroup
	for range 8 {
		c := p.Conn(10*time.Second, 0, nil)
		defer c.Close()
		wg.Go(func() {
			var resp h1.Response
			for range 5 {
				if err := c.Do(h1.NewRequest("GET", "/", nil), &resp); err != nil || string(resp.Body) != "ok" {
					t.Errorf("%v %q", err, resp.Body)
					return
				}
			}
		})
	}
	wg.Wait()
	if most.Load() > 1 {
		t.Errorf("%d streams at once on a server that takes one", most.Load())
	}
}

// DATA past a stream's window (1 MiB and a frame, none of it read, no
// credit given) ends the connection: probe holds no more than the window.
func TestDataPastTheWindowEndsTheConnection(t *testing.T) {
	var wire bytes.Buffer
	w := http2.NewFramer(&wire, nil)
	chunk := make([]byte, 16<<10)
	for range streamWindow/len(chunk) + 1 {
		w.WriteData(1, false, chunk)
	}
	r := http2.NewFramer(nil, &wire)
	cc := &clientConn{streams: map[uint32]*stream{}}
	st := &stream{id: 1, status: 200, more: make(chan struct{}, 1), ready: make(chan struct{})}
	cc.streams[1] = st
	var err error
	frames := 0
	for err == nil {
		f, rerr := r.ReadFrame()
		if rerr != nil {
			t.Fatalf("after %d frames: %v", frames, rerr)
		}
		frames++
		err = cc.data(f.(*http2.DataFrame))
	}
	if frames != streamWindow/len(chunk)+1 || len(st.buf) > streamWindow || !strings.Contains(err.Error(), "past its window") {
		t.Errorf("refused at frame %d holding %d bytes: %v", frames, len(st.buf), err)
	}
}

// Padding takes a stream's window and is never read: probe gives its
// credit back as it comes, so a reply padded past the window (1.25 MiB
// of padding, 50 KB of data) flows, and the WINDOW_UPDATEs probe sends on
// the stream cover the padding.
func TestPaddingGivesItsCreditBack(t *testing.T) {
	var credited atomic.Int64
	addr := rawServer(t, 100, func(fr *http2.Framer, _ int) {
		id, ok := nextRequest(fr)
		if !ok {
			return
		}
		go func() {
			for {
				f, err := fr.ReadFrame()
				if err != nil {
					return
				}
				if wu, ok := f.(*http2.WindowUpdateFrame); ok && wu.StreamID == id {
					credited.Add(int64(wu.Increment))
				}
			}
		}()
		replyHeaders(fr, id, false)
		pad := make([]byte, 250)
		for range 5000 {
			if fr.WriteDataPadded(id, false, []byte("0123456789"), pad) != nil {
				return
			}
		}
		fr.WriteData(id, true, nil)
		time.Sleep(time.Second)
	})
	c := (&Pool{Addr: addr}).Conn(10*time.Second, 0, nil)
	defer c.Close()
	var resp h1.Response
	if err := c.Do(h1.NewRequest("GET", "/", nil), &resp); err != nil || len(resp.Body) != 50000 {
		t.Fatalf("a padded reply: %v, %d bytes", err, len(resp.Body))
	}
	deadline := time.Now().Add(2 * time.Second)
	for credited.Load() < 5000*251 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := credited.Load(); got < 5000*251 {
		t.Errorf("the stream's credit given back: %d bytes, want at least the padding's %d", got, 5000*251)
	}
}
