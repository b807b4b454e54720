// Package h1 is a lean HTTP/1.1 client for the load path: one kept-alive
// connection, requests serialised once, replies read into reused buffers.
// net/http's client costs about 1.6 times wrk's CPU per request (see
// docs/BENCHMARKS.md); the generator must not be what the user measures.
package h1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
)

// Request is a prepared request: its bytes are built once and sent as is.
type Request struct {
	Method string
	Path   string // path and query, as sent
	Header []Field
	Body   []byte
	// Watch, when set, makes a reply's watch: told each part of the body
	// as it comes (each byte once), it says when the body so far holds the
	// whole reply before its stream ends — an event stream's result, on a
	// stream the server may keep open. The reply is timed to it
	// (Response.Done), and a stream still open StreamGrace later is cut:
	// the connection closes and the request has its reply.
	Watch func() func(more []byte) bool
	raw   []byte
	host  string
	err   error // why raw could not be built: the request is refused, not sent
	// block is the request's HTTP/2 header block for blockHost (HeaderBlock).
	block     []byte
	blockHost string
}

// HeaderBlock is the request's header block on another protocol's wire
// (lib/h2's HPACK, which keeps no state between blocks), built by build
// once per authority and then sent as is, as its HTTP/1.1 bytes are. A
// request is one client's: it is not built by two at once.
func (r *Request) HeaderBlock(authority string, build func() []byte) []byte {
	if r.block == nil || r.blockHost != authority {
		r.block, r.blockHost = bytes.Clone(build()), authority
	}
	return r.block
}

// Field is one header line.
type Field struct{ Name, Value string }

// NewRequest prepares a request; Host is filled in by the connection.
func NewRequest(method, path string, body []byte, header ...Field) *Request {
	return &Request{Method: method, Path: path, Body: body, Header: header}
}

// HeaderValue is the request's value of a header ("" when it has none).
func (r *Request) HeaderValue(name string) string {
	for _, f := range r.Header {
		if asciiEqualFold([]byte(f.Name), name) {
			return f.Value
		}
	}
	return ""
}

// bytes is the request as it goes on the wire, built and checked once per
// host: a request that is not HTTP (a CR LF in a header value, a space in
// the target) is refused here, so the checks cost once, not on every send.
func (r *Request) bytes(host string) ([]byte, error) {
	if (r.raw != nil || r.err != nil) && r.host == host {
		return r.raw, r.err
	}
	r.raw, r.host, r.err = nil, host, r.check(host)
	if r.err != nil {
		return nil, r.err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", r.Method, r.Path, host)
	for _, f := range r.Header {
		fmt.Fprintf(&b, "%s: %s\r\n", f.Name, f.Value)
	}
	if r.Body != nil || r.Method == "POST" || r.Method == "PUT" || r.Method == "PATCH" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(r.Body))
	}
	b.WriteString("\r\n")
	b.Write(r.Body)
	r.raw = b.Bytes()
	return r.raw, nil
}

// Response is a reply. Body and the header block are reused by the next
// request on the same connection: copy what must outlive it.
type Response struct {
	Status    int
	Body      []byte // as received: still compressed if Content-Encoding says so
	WireBytes int    // status line, headers and body as they crossed the wire
	// Done is when the request's Watch first said complete (zero without one,
	// or when the stream ended first); Cut, that the stream was cut after.
	Done     time.Time
	Cut      bool
	header   []byte // the raw header block
	encoding []byte // the first Content-Encoding's value, within header
	close    bool
}

// Encoding is the reply's Content-Encoding ("" when it has none), as
// Header says it but read once, with the header block: the bytes live
// until the next request.
func (r *Response) Encoding() []byte { return r.encoding }

// Header returns the first value of the named header (case-insensitive), or "".
func (r *Response) Header(name string) string {
	for h := r.header; len(h) > 0; {
		i := bytes.Index(h, crlf)
		if i < 0 {
			i = len(h)
		}
		line := h[:i]
		h = h[min(len(h), i+2):]
		if c := bytes.IndexByte(line, ':'); c == len(name) && asciiEqualFold(line[:c], name) {
			return string(bytes.TrimSpace(line[c+1:]))
		}
	}
	return ""
}

var crlf = []byte("\r\n")

// DefaultMaxBody bounds a reply's body when Conn.MaxBody is 0; maxHeader
// bounds its status line and header block. A server under test is not
// trusted: a reply past a bound is that request's error, not probe's end.
const (
	DefaultMaxBody = 64 << 20
	maxHeader      = 1 << 20
)

// TooLargeError is a reply past a bound: its body (Content-Length, chunks
// or bytes until close) or its header block.
type TooLargeError struct {
	What  string // "reply" or "header"
	Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s over %s", e.What, humanize.IBytes(uint64(e.Limit)))
}

// Conn is one client's connection to one host, dialled on first use and
// again only when the server closes it.
type Conn struct {
	Addr    string // host:port
	Timeout time.Duration
	MaxBody int     // bound of a reply's body as received (0: DefaultMaxBody)
	Budget  *Budget // shared by the connections of a run: what they hold beyond an allowance each; nil: none
	Opened  int     // connections dialled
	Dropped int     // kept-alive connections the server closed (Connection: close, or gone when reused): churn
	// Loop, when set, is the event loop the connection is read, written
	// and dialled in: Do is then called from one of its clients.
	Loop     *Loop
	reply    body // accounts for the reply's body buffer
	decoded  body // and for the buffer Decode fills
	nc       socket
	io       io.ReadWriter // nc's socket read and written raw (rawIO), or nc
	br       *bufio.Reader
	mu       sync.Mutex // guards nc against Interrupt from another goroutine
	rearm    time.Time  // when the read/write deadline is due to be moved on
	sentAt   time.Time  // when the last request on nc was sent: nc is hot while it is recent
	end      streamEnd  // the last request's, when it has a Watch
	armGrace func()     // c.graceDeadline, bound once
}

// hotGap is how recently a connection's last request must have gone for
// the next to be written inside its reply's read (rawIO.Send). That read
// skips the read that would find an end of file the server sent before
// it, which an edge-triggered poller does not report twice: a server that
// closes an idle connection (after seconds) or half-closes it and lingers
// would leave the request waiting for its deadline. On a connection used
// a moment ago, an unannounced close is a full close, and the reset our
// request draws wakes the read.
const hotGap = 10 * time.Millisecond

// Interrupt makes a request in flight on c return now (the run is ending).
func (c *Conn) Interrupt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nc != nil {
		c.nc.SetDeadline(time.Unix(1, 0))
	}
}

// ErrClosed marks a connection the server closed before replying.
var ErrClosed = errors.New("connection closed by server")

// errUnsent marks a request that could not be written: the server cannot
// have acted on it.
var errUnsent = errors.New("request not sent")

// Do sends req and reads the reply into resp. A kept-alive connection that
// the server closed while idle is dialled again once: for any request the
// server cannot have seen, and for an idempotent one it may have (as
// net/http does; a POST that reached the server is not sent twice).
func (c *Conn) Do(req *Request, resp *Response) error {
	return c.DoAt(time.Now(), req, resp)
}

// DoAt is Do for a caller that has just read the clock: now is when the
// request goes (a clock read a request fewer).
func (c *Conn) DoAt(now time.Time, req *Request, resp *Response) error {
	c.release(resp)
	// A request that fails before its reply is read keeps no Done or Cut
	// of the reply before it (its caller would time the failure to it).
	resp.Done, resp.Cut = time.Time{}, false
	raw, err := req.bytes(c.Addr)
	if err != nil {
		return err // nothing sent: the connection stays as it was
	}
	fresh := c.nc == nil
	if err := c.roundTrip(now, req, raw, resp); err != nil {
		c.Close()
		if !fresh && errors.Is(err, ErrClosed) {
			c.Dropped++
		}
		if fresh || !errors.Is(err, ErrClosed) || !errors.Is(err, errUnsent) && !idempotent(req.Method) {
			return err
		}
		if err := c.roundTrip(time.Now(), req, raw, resp); err != nil {
			c.Close()
			return err
		}
	}
	if resp.close {
		if !resp.Cut { // a stream cut is probe's close, not churn
			c.Dropped++
		}
		c.Close()
	}
	return nil
}

func (c *Conn) roundTrip(now time.Time, req *Request, raw []byte, resp *Response) error {
	if c.nc != nil && !idempotent(req.Method) && closedByPeer(c.nc) {
		c.Dropped++
		// Such a request is not sent twice, so it is not sent on a
		// connection the server has already closed (as net/http's pool
		// notices with its background reader).
		c.Close()
	}
	if c.nc == nil {
		nc, rw, err := c.dial()
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.nc, c.io, c.br, c.Opened, c.rearm = nc, rw, bufio.NewReaderSize(rw, 32<<10), c.Opened+1, time.Time{}
		c.mu.Unlock()
		now = time.Now() // the dial took its time: the deadline starts after it
	}
	hot := now.Sub(c.sentAt) < hotGap
	c.sentAt = now
	if c.Timeout > 0 {
		// Re-arm the deadline only when half of it has passed: a deadline per
		// request costs a timer update, and a reply still has Timeout/2 at least.
		if now.After(c.rearm) {
			c.nc.SetDeadline(now.Add(c.Timeout))
			c.rearm = now.Add(c.Timeout / 2)
		}
	}
	if ri, ok := c.io.(*rawIO); ok && hot && c.br.Buffered() == 0 {
		// Written by the reply's first read, which then parks until the
		// reply comes rather than first finding none.
		ri.Send(raw)
		err := c.read(req, resp)
		if werr := ri.Sent(); werr != nil {
			return fmt.Errorf("%w (%w): %v", ErrClosed, errUnsent, werr)
		}
		return err
	}
	if _, err := c.io.Write(raw); err != nil {
		return fmt.Errorf("%w (%w): %v", ErrClosed, errUnsent, err)
	}
	if c.Loop == nil {
		// Let the other clients send before this one waits for its reply:
		// the reads then find data instead of parking at once (fewer
		// syscalls, as an event loop like wrk's batches them).
		runtime.Gosched()
	}
	return c.read(req, resp)
}

// read reads req's reply. With a Watch, the stream's last wait after
// the reply is complete is StreamGrace, not the request's timeout.
func (c *Conn) read(req *Request, resp *Response) error {
	if req.Watch == nil {
		return readResponse(c.br, req.Method == "HEAD", c.bodyLimits(&c.reply), resp, nil)
	}
	if c.armGrace == nil {
		c.armGrace = c.graceDeadline // bound once: not a closure a request
	}
	c.end = streamEnd{watch: req.Watch(), grace: c.armGrace}
	err := readResponse(c.br, req.Method == "HEAD", c.bodyLimits(&c.reply), resp, &c.end)
	if !c.end.done.IsZero() && !resp.Cut && c.nc != nil {
		// The stream ended within its grace: the connection stays, with
		// the request timeout's deadline back now. The grace's, left to
		// expire while it idles, would blind closedByPeer (a read past its
		// deadline never looks): a POST would go on a connection the
		// server has closed, and fail.
		c.mu.Lock()
		if c.Timeout > 0 {
			now := time.Now()
			c.nc.SetDeadline(now.Add(c.Timeout))
			c.rearm = now.Add(c.Timeout / 2)
		} else {
			c.nc.SetDeadline(time.Time{})
		}
		c.mu.Unlock()
	}
	return err
}

// graceDeadline gives the stream of a complete reply StreamGrace to end.
func (c *Conn) graceDeadline() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nc != nil {
		c.nc.SetDeadline(time.Now().Add(StreamGrace))
	}
}

// bodyLimits sets b's bounds from the connection's.
func (c *Conn) bodyLimits(b *body) *body {
	b.max, b.budget = c.MaxBody, c.Budget
	if b.max <= 0 {
		b.max = DefaultMaxBody
	}
	return b
}

// Decode reads r (a decompressor of the last reply) to its end into a
// buffer of the connection's, within the same bounds as a reply: a gzip
// bomb is that request's error. The bytes live until the next Do.
func (c *Conn) Decode(r io.Reader) ([]byte, error) {
	b := c.bodyLimits(&c.decoded)
	out, err := b.readAll(r, b.buf[:0], nil)
	b.buf = out
	if tl, ok := err.(*TooLargeError); ok && tl.What == "reply" {
		tl.What = "reply decoded"
	}
	return out, err
}

// release drops the buffers of the last reply when they are larger than
// the allowance: memory beyond it goes back to the budget between
// requests, for the other connections.
func (c *Conn) release(resp *Response) {
	// held without a large buffer: a reply's reservation whose bytes did
	// not all come.
	if cap(resp.Body) > allowance || c.reply.held > 0 {
		resp.Body = nil
		c.reply.giveBack()
	}
	if cap(c.decoded.buf) > allowance || c.decoded.held > 0 {
		c.decoded.buf = nil
		c.decoded.giveBack()
	}
}

// socket is a connection as Conn keeps it: a net.Conn, or a Loop's.
type socket interface {
	SetDeadline(t time.Time) error
	Close() error
}

// dial connects to c.Addr: in c's loop, or a net.Conn whose socket is
// read and written raw (rawIO) on Go's netpoller.
func (c *Conn) dial() (socket, io.ReadWriter, error) {
	if c.Loop != nil {
		s, err := c.Loop.dial(c.Addr, 5*time.Second)
		if err != nil {
			return nil, nil, err
		}
		return s, s, nil
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	nc, err := d.Dial("tcp", c.Addr)
	if err != nil {
		return nil, nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	if r := newRawIO(nc); r != nil {
		return nc, r, nil
	}
	return nc, nc, nil
}

// closedByPeer peeks at the socket without blocking: a kept-alive
// connection the server closed reads as end of file.
func closedByPeer(nc socket) bool {
	if ls, ok := nc.(interface{ peerClosed() bool }); ok {
		return ls.peerClosed()
	}
	raw := rawConn(nc)
	if raw == nil {
		return false
	}
	closed := false
	var b [1]byte
	raw.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n == 0 && err == nil
		return true // never wait
	})
	return closed
}

func idempotent(method string) bool {
	switch method {
	case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE":
		return true
	}
	return false
}

// Close drops the connection; the next Do dials again.
func (c *Conn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nc != nil {
		c.nc.Close()
		c.nc, c.io, c.br = nil, nil, nil
	}
}

// readResponse reads one reply into resp within lim's bounds.
func readResponse(br *bufio.Reader, head bool, lim *body, resp *Response, end *streamEnd) error {
	resp.header, resp.encoding = resp.header[:0], nil
	resp.Body = resp.Body[:0]
	resp.Status, resp.close = 0, false
	resp.Done, resp.Cut = time.Time{}, false
	line, err := br.ReadSlice('\n')
	if err != nil {
		if err == io.EOF && len(line) == 0 {
			return ErrClosed
		}
		if errors.Is(err, syscall.ECONNRESET) && len(line) == 0 {
			// Reset before a byte of the reply: closed as an end of file
			// is (the request drew the reset of a server that had closed).
			return fmt.Errorf("%w: %w", ErrClosed, err)
		}
		return fmt.Errorf("reading status line: %w", err)
	}
	wire := len(line)
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return fmt.Errorf("malformed status line %q", bytes.TrimSpace(line))
	}
	status, ok := digits(line[9:12])
	if !ok {
		return fmt.Errorf("malformed status line %q", bytes.TrimSpace(line))
	}
	resp.Status = status
	http10 := line[7] == '0'
	contentLength, chunked, encoded := -1, false, false
	connClose := http10
	for {
		line, err = br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return &TooLargeError{What: "header line", Limit: br.Size()}
		}
		if err != nil {
			return fmt.Errorf("reading headers: %w", err)
		}
		wire += len(line)
		if wire > maxHeader {
			return &TooLargeError{What: "header", Limit: maxHeader}
		}
		l := trimEOL(line)
		if len(l) == 0 {
			break
		}
		at := len(resp.header)
		resp.header = append(append(resp.header, l...), crlf...)
		c := bytes.IndexByte(l, ':')
		if c < 0 {
			continue
		}
		name, value := l[:c], bytes.TrimSpace(l[c+1:])
		switch {
		case len(name) < len("Connection"): // the shortest of those below
		case !encoded && asciiEqualFold(name, "Content-Encoding"):
			// The first field's, as Header says it, even when empty.
			resp.encoding, encoded = bytes.TrimSpace(resp.header[at+c+1:at+len(l)]), true
		case asciiEqualFold(name, "Content-Length"):
			var ok bool
			if contentLength, ok = digits(value); !ok {
				return fmt.Errorf("bad Content-Length %q", value)
			}
		case asciiEqualFold(name, "Transfer-Encoding"):
			chunked = bytes.Contains(bytes.ToLower(value), []byte("chunked"))
		case asciiEqualFold(name, "Connection"):
			if asciiEqualFold(value, "close") {
				connClose = true
			} else if asciiEqualFold(value, "keep-alive") {
				connClose = false
			}
		}
	}
	resp.close = connClose
	switch {
	case head || status == 204 || status == 304 || status/100 == 1:
	case chunked:
		n, err := readChunked(br, lim, resp, end)
		wire += n
		if err != nil && !end.cut(resp) {
			return err
		}
	case contentLength > lim.max:
		return &TooLargeError{What: "reply", Limit: lim.max}
	case contentLength >= 0:
		var err error
		if resp.Body, err = lim.readWhole(br, resp.Body, contentLength); err != nil {
			return bodyError(err)
		}
		wire += contentLength
	default: // body until close
		var err error
		if resp.Body, err = lim.readAll(br, resp.Body, end); err != nil && !end.cut(resp) {
			return bodyError(err)
		}
		wire += len(resp.Body)
		resp.close = true
	}
	resp.WireBytes = wire
	if end != nil {
		resp.Done = end.done
	}
	return nil
}

// bodyError is a body read's error as a request's: a bound hit as it is.
func bodyError(err error) error {
	var tl *TooLargeError
	var be *BudgetError
	if errors.As(err, &tl) || errors.As(err, &be) {
		return err
	}
	return fmt.Errorf("reading body: %w", err)
}

func readChunked(br *bufio.Reader, lim *body, resp *Response, end *streamEnd) (int, error) {
	wire := 0
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return wire, fmt.Errorf("reading chunk size: %w", err)
		}
		wire += len(line)
		if framing := wire - len(resp.Body); framing > maxHeader+len(resp.Body) {
			return wire, &TooLargeError{What: "chunk framing", Limit: maxHeader}
		}
		sz := bytes.TrimSpace(line)
		if i := bytes.IndexByte(sz, ';'); i >= 0 {
			sz = sz[:i]
		}
		n, err := strconv.ParseUint(string(sz), 16, 31)
		if err != nil {
			return wire, fmt.Errorf("bad chunk size %q", sz)
		}
		if n == 0 {
			for { // trailers until the empty line
				line, err := br.ReadSlice('\n')
				if err != nil {
					return wire, fmt.Errorf("reading trailers: %w", err)
				}
				wire += len(line)
				if wire-len(resp.Body) > maxHeader {
					return wire, &TooLargeError{What: "chunk framing", Limit: maxHeader}
				}
				if len(bytes.TrimSpace(line)) == 0 {
					return wire, nil
				}
			}
		}
		if resp.Body, err = lim.readFull(br, resp.Body, int(n)); err != nil {
			var tl *TooLargeError
			var be *BudgetError
			if errors.As(err, &tl) || errors.As(err, &be) {
				return wire, err
			}
			return wire, fmt.Errorf("reading chunk: %w", err)
		}
		if _, err := br.Discard(2); err != nil {
			return wire, fmt.Errorf("reading chunk end: %w", err)
		}
		wire += int(n) + 2
		end.check(resp.Body)
	}
}

// digits is b as a decimal number (digits only: no sign, no space) that
// an int holds: a status code or a Content-Length, parsed without a
// string made of it.
func digits(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		d := int(c - '0')
		if c < '0' || c > '9' || n > (math.MaxInt-d)/10 {
			return 0, false
		}
		n = 10*n + d
	}
	return n, true
}

// trimEOL is line without its CR LF (or LF, or any run of them).
func trimEOL(line []byte) []byte {
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	return line
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
