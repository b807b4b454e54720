// Command wsbroken is a WebSocket fan-out server that gets one delivery
// wrong on purpose, for probe ws's tests: probe must catch it, count it
// exactly and exit 1. It listens on loopback and prints its URL.
//
//	-fault drop      the fifth event published is not sent to one subscriber of its room
//	-fault dup       the fifth event is sent twice to one subscriber
//	-fault misroute  the fifth event is sent also to a subscriber of another room
//	-fault refuse    every upgrade is refused: 403 and a body
//	-fault garbage   garbage frames and messages to some connections (garbage.go)
//	-fault none      every event once, to its room
//
// GET /ws?room=NAME&token=T subscribes (token "t0k"; a wrong one is 401)
// and says {"type":"ready"}; POST /publish {"room","data"} fans out.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
)

const token = "t0k"

type sub struct {
	id   int
	send chan []byte
}

type hub struct {
	fault string
	mu    sync.Mutex
	rooms map[string][]*sub
	next  int
	n     atomic.Int64 // events published
}

func (h *hub) serveWS(w http.ResponseWriter, r *http.Request) {
	if h.fault == "refuse" {
		http.Error(w, "upgrades are closed for maintenance", http.StatusForbidden)
		return
	}
	if r.URL.Query().Get("token") != token {
		http.Error(w, "wrong token", http.StatusUnauthorized)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	room := r.URL.Query().Get("room")
	h.mu.Lock()
	h.next++
	s := &sub{id: h.next, send: make(chan []byte, 1024)}
	h.rooms[room] = append(h.rooms[room], s)
	h.mu.Unlock()
	defer h.leave(room, s)
	ctx := c.CloseRead(r.Context())
	if c.Write(ctx, websocket.MessageText, []byte(`{"type":"ready"}`)) != nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-s.send:
			if c.Write(ctx, websocket.MessageText, m) != nil {
				return
			}
		}
	}
}

func (h *hub) leave(room string, s *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	subs := h.rooms[room]
	for i, x := range subs {
		if x == s {
			h.rooms[room] = append(subs[:i:i], subs[i+1:]...)
			return
		}
	}
}

func (h *hub) publish(w http.ResponseWriter, r *http.Request) {
	var ev struct{ Room, Data string }
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<10)).Decode(&ev); err != nil {
		http.Error(w, "want {room, data}", http.StatusBadRequest)
		return
	}
	msg, _ := json.Marshal(map[string]string{"type": "event", "room": ev.Room, "data": ev.Data})
	n := h.n.Add(1)
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, s := range h.rooms[ev.Room] {
		if n == 5 && i == 0 {
			switch h.fault {
			case "drop":
				continue
			case "dup":
				s.send <- msg
			case "misroute":
				// The first other room in name order: the same one each run.
				var names []string
				for name, subs := range h.rooms {
					if name != ev.Room && len(subs) > 0 {
						names = append(names, name)
					}
				}
				sort.Strings(names)
				if len(names) > 0 {
					h.rooms[names[0]][0].send <- msg
				}
			}
		}
		s.send <- msg
	}
	fmt.Fprintln(w, `{"ok":true}`)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	fault := flag.String("fault", "none", "drop, dup, misroute, refuse, garbage or none")
	flag.Parse()
	switch *fault {
	case "drop", "dup", "misroute", "refuse", "garbage", "none":
	default:
		fmt.Fprintf(os.Stderr, "wsbroken: unknown -fault %q\n", *fault)
		os.Exit(2)
	}
	h := &hub{fault: *fault, rooms: map[string][]*sub{}}
	mux := http.NewServeMux()
	if *fault == "garbage" {
		mux.HandleFunc("GET /ws", h.serveGarbage)
	} else {
		mux.HandleFunc("GET /ws", h.serveWS)
	}
	mux.HandleFunc("POST /publish", h.publish)
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wsbroken:", err)
		os.Exit(1)
	}
	fmt.Printf("listening on http://%s\n", l.Addr())
	srv := &http.Server{Handler: mux, BaseContext: func(net.Listener) context.Context { return context.Background() }}
	fmt.Fprintln(os.Stderr, srv.Serve(l))
}
