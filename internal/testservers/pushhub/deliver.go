package pushhub

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/coder/websocket"
)

// Deliver is one subscriber's connection, for this hub and the tests'
// other push servers: it upgrades r, says {"type":"ready"} (the caller
// has put ch in its room by then, so that nothing published after the
// ready is missed) and writes what comes on ch until the client or the
// request goes.
func Deliver[M any](w http.ResponseWriter, r *http.Request, ch <-chan M, write func(context.Context, *websocket.Conn, M) error) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context())
	c.Write(ctx, websocket.MessageText, []byte(`{"type":"ready"}`))
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-ch:
			if write(ctx, c, m) != nil {
				return
			}
		}
	}
}

// Text writes m as one text message.
func Text(ctx context.Context, c *websocket.Conn, m []byte) error {
	return c.Write(ctx, websocket.MessageText, m)
}

// Published is what POST /publish carries: {"room", "data"}.
type Published struct{ Room, Data string }

// ReadPublished reads a publish request's event (64 KiB at most); a body
// that is not one is answered 400 and ok is false.
func ReadPublished(w http.ResponseWriter, r *http.Request) (ev Published, ok bool) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if json.Unmarshal(body, &ev) != nil {
		http.Error(w, "bad event", http.StatusBadRequest)
		return ev, false
	}
	return ev, true
}
