package analyzers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// wsEvent is what the push server sends: encoded per subscriber.
type wsEvent struct {
	Room  string   `json:"room"`
	Seq   int      `json:"seq"`
	Items []string `json:"items"`
}

var wsItems = strings.Fields(strings.Repeat("alpha beta gamma delta epsilon ", 60))

// wsWriteLoop is a push server's per-connection write loop, a goroutine
// of its own: it encodes each event and writes it.
func wsWriteLoop(ctx context.Context, c *websocket.Conn) {
	for seq := 0; ctx.Err() == nil; seq++ {
		b, _ := json.Marshal(wsEvent{Room: "r", Seq: seq, Items: wsItems})
		if err := c.Write(ctx, websocket.MessageText, b); err != nil {
			return
		}
	}
}

func wsPush(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	go wsWriteLoop(ctx, c)
	_, _, _ = c.Read(ctx) // until the client goes
	cancel()
	c.CloseNow()
}

// A WebSocket server's write loop runs on a goroutine of the target's
// own, started from the handler: its samples serve, the encoding too
// (the samples that do not reach the connection), and the target's own
// ticker does not.
func TestServingCPUHoldsAWebSocketWriteLoop(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(wsPush))
	defer srv.Close()
	p := profileClients(t, 2, func() func() bool {
		c, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
		if err != nil {
			t.Error(err)
			return nil
		}
		t.Cleanup(func() { c.CloseNow() })
		c.SetReadLimit(1 << 20)
		return func() bool {
			_, _, err := c.Read(context.Background())
			if err != nil {
				t.Error(err)
			}
			return err == nil
		}
	})
	c := Analyze(p, nil, Evidence{Endpoint: "ws push"}, DefaultRules()).CPU
	loop := cpuUnder(p, `analyzers\.wsWriteLoop$`)
	encode := cpuUnder(p, `analyzers\.wsWriteLoop$`) - cpuUnder(p, `^net\.\(\*conn\)\.Write$`)
	background := cpuUnder(p, `analyzers\.spin$`)
	t.Logf("CPU split: %+v; write loop %.2f s (%.2f s not at the connection), ticker %.2f s", c, loop, encode, background)
	if c.Serving < 0.98*loop {
		t.Errorf("serving %.2f s, but the write loop took %.2f s", c.Serving, loop)
	}
	if c.Background < 0.9*background {
		t.Errorf("background %.2f s, but the own ticker goroutine took %.2f s", c.Background, background)
	}
}
