package ws

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// publisher sends the events: a few workers, each owning some rooms, so
// that a room's events leave in order.
type publisher struct {
	workers int
	http    *http.Client
	url     string
	ws      []*websocket.Conn // one per worker with Publish "ws"
}

func (p *publisher) open(ctx context.Context, r *run) error {
	p.workers = min(r.o.Rooms, 8)
	base := strings.TrimSuffix(r.o.Base.String(), "/")
	p.url = base + r.o.PublishPath
	p.http = &http.Client{Timeout: 30 * time.Second,
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
		w, resp, err := websocket.Dial(dctx, wsBase+r.o.PublishPath, &websocket.DialOptions{HTTPHeader: h})
		cancel()
		if err != nil {
			p.close()
			if resp != nil {
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
				return fmt.Errorf("the publisher's connection: %w", &RefusedError{Status: resp.StatusCode, Body: string(body), Err: err})
			}
			return fmt.Errorf("the publisher's connection: %v", err)
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
					body := fill(r.o.PublishBody, "{room}", RoomName(room), "{event}", Marker(room, seq, sent))
					err := p.send(ctx, r, w, body)
					took += time.Since(r.start) - sent
					if err != nil {
						bad++
						continue
					}
					r.pubMu.Lock()
					set(r.published[room], seq)
					r.pubMu.Unlock()
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

func (p *publisher) send(ctx context.Context, r *run, w int, body string) error {
	if p.ws != nil {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return p.ws[w].Write(wctx, websocket.MessageText, []byte(body))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	for k, v := range r.o.Header {
		req.Header[k] = v
	}
	if r.o.Token != "" && r.o.Auth != "none" {
		req.Header.Set("Authorization", "Bearer "+r.o.Token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.http.Do(req)
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
