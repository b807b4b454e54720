package ws

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/probehq/probe/result"

	"github.com/coder/websocket"

	"github.com/probehq/probe/lib/redirect"
	"github.com/probehq/probe/lib/textline"
)

// roomName is room i's name ({room}): the file's, or r0, r1, ….
func (o *Options) roomName(i int) string {
	if i < len(o.RoomNames) {
		return o.RoomNames[i]
	}
	return result.WSRoomName(i)
}

// checkPublish checks the publishing options and the room names.
func (o *Options) checkPublish() error {
	switch o.PublishMethod {
	case "", http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return fmt.Errorf("--publish-method %q: want POST, PUT or PATCH", o.PublishMethod)
	}
	if o.RoomNames != nil && len(o.RoomNames) != o.Rooms {
		return fmt.Errorf("%d room names for %d rooms", len(o.RoomNames), o.Rooms)
	}
	seen := map[string]bool{}
	for _, n := range o.RoomNames {
		if n == "" || len(n) > 200 || seen[n] {
			return fmt.Errorf("room name %q: want a name of 1 to 200 bytes, each once", n)
		}
		seen[n] = true
	}
	if x := o.ExperimentRoom; x != "" {
		if len(x) > 200 {
			return fmt.Errorf("--experiment-room: want a name of 1 to 200 bytes")
		}
		for i := range o.Rooms {
			if o.roomName(i) == x {
				return fmt.Errorf("--experiment-room %q is room %d of the run: want a room no connection joins", textline.Of(x, 80), i)
			}
		}
	}
	return nil
}

// publisher sends the events: a few workers, each owning some rooms, so
// that a room's events leave in order.
type publisher struct {
	workers int
	http    *http.Client
	base    string            // the target's URL without a trailing slash
	ws      []*websocket.Conn // one per worker with Publish "ws"
	// redirected is the first publish answered 3xx (refused): the run's
	// warning names where it pointed.
	redirected atomic.Pointer[redirect.Error]
}

func (p *publisher) open(ctx context.Context, r *run) error {
	p.workers = min(r.o.Rooms, 8)
	base := strings.TrimSuffix(r.o.Base.String(), "/")
	p.base = base
	// A publish answered 3xx is refused (lib/redirect): it is not sent
	// again where the server points, with the headers and the token, and
	// it is not accepted.
	p.http = &http.Client{Timeout: 30 * time.Second, CheckRedirect: redirect.Refuse("a publish"),
		Transport: &http.Transport{MaxIdleConnsPerHost: p.workers, MaxConnsPerHost: p.workers}}
	if r.o.Publish != "ws" {
		return nil
	}
	wsBase := strings.Replace(base, "http", "ws", 1)
	for range p.workers {
		h := r.o.Header.Clone()
		if h == nil {
			h = http.Header{}
		}
		if r.o.Token != "" && r.o.Auth != "none" {
			h.Set("Authorization", "Bearer "+r.o.Token)
		}
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		w, resp, err := websocket.Dial(dctx, wsBase+r.o.PublishPath, &websocket.DialOptions{HTTPHeader: h,
			HTTPClient: &http.Client{CheckRedirect: redirect.Refuse("the publisher's WebSocket upgrade")}})
		cancel()
		if err != nil {
			p.close()
			if e := redirect.As(err); e != nil {
				return e
			}
			if resp != nil {
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
				return fmt.Errorf("the publisher's connection: %w", &RefusedError{Status: resp.StatusCode, Body: string(body), Err: err})
			}
			return fmt.Errorf("the publisher's connection: %s", textline.Of(err.Error(), textline.Max))
		}
		// What the server sends the publisher (a ready, its own events)
		// is read and dropped: CloseRead would close on a data message.
		go func() {
			for {
				if _, _, err := w.Read(context.Background()); err != nil {
					return
				}
			}
		}()
		p.ws = append(p.ws, w)
	}
	return nil
}

func (p *publisher) close() {
	for _, w := range p.ws {
		w.CloseNow()
	}
	p.ws = nil
	if p.http != nil {
		p.http.CloseIdleConnections()
	}
}

// round publishes round i: Events events to every room; how many were
// accepted and how many failed (those are marked, and expected by no
// connection).
func (p *publisher) round(ctx context.Context, r *run, i int) (published, failed int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range p.workers {
		wg.Go(func() {
			var ok, bad int
			var took time.Duration
			for k := range r.o.Events {
				for room := w; room < r.o.Rooms; room += p.workers {
					if ctx.Err() != nil {
						break
					}
					seq := i*r.o.Events + k
					sent := time.Since(r.start)
					name, event := r.o.roomName(room), Marker(room, seq, sent)
					body := fill(r.o.PublishBody, "{room}", name, "{event}", event)
					path := fill(r.o.PublishPath, "{room}", url.PathEscape(name), "{event}", event)
					err := p.send(ctx, r, w, path, body)
					took += time.Since(r.start) - sent
					if err != nil {
						bad++
						r.markRefused(room, seq)
						continue
					}
					r.markAccepted(room, seq)
					ok++
				}
			}
			r.publishDur.Add(int64(took))
			mu.Lock()
			published += ok
			failed += bad
			mu.Unlock()
		})
	}
	wg.Wait()
	return published, failed
}

// markRefused records that the publish of room's event seq failed.
func (r *run) markRefused(room, seq int) {
	k := room*r.perRoom + seq
	r.refused[k/64].Or(1 << (k % 64))
}

// makeEventSets makes the bitsets of accepted and refused publishes.
func (r *run) makeEventSets() {
	r.refused = make([]atomic.Uint64, words(r.o.Rooms*r.perRoom))
	r.accepted = make([]atomic.Uint64, words(r.o.Rooms*r.perRoom))
}

// markAccepted records that the target accepted room's event seq.
func (r *run) markAccepted(room, seq int) {
	k := room*r.perRoom + seq
	r.accepted[k/64].Or(1 << (k % 64))
}

// wasAccepted says whether the target accepted room's event seq.
func (r *run) wasAccepted(room, seq int) bool {
	k := room*r.perRoom + seq
	return r.accepted[k/64].Load()&(1<<(k%64)) != 0
}

// wasRefused says whether the publish of room's event seq failed.
func (r *run) wasRefused(room, seq int) bool {
	k := room*r.perRoom + seq
	return r.refused[k/64].Load()&(1<<(k%64)) != 0
}

// send publishes one event: body as a message on worker w's connection,
// or as an HTTP request to path.
func (p *publisher) send(ctx context.Context, r *run, w int, path, body string) error {
	if p.ws != nil {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return p.ws[w].Write(wctx, websocket.MessageText, []byte(body))
	}
	method := cmp.Or(r.o.PublishMethod, http.MethodPost)
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range r.o.Header {
		req.Header[k] = v
	}
	if r.o.Token != "" && r.o.Auth != "none" {
		req.Header.Set("Authorization", "Bearer "+r.o.Token)
	}
	ctype := "text/plain; charset=utf-8" // a note's Markdown, say
	if b := strings.TrimSpace(body); strings.HasPrefix(b, "{") || strings.HasPrefix(b, "[") {
		ctype = "application/json"
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := p.http.Do(req)
	if e := redirect.As(err); e != nil {
		p.redirected.CompareAndSwap(nil, e)
		return e
	}
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("publish: HTTP %d", resp.StatusCode)
	}
	return nil
}
