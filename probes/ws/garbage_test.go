package ws

import (
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/coder/websocket"
)

func TestBrokeProtocol(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("failed to read: %w: read limited at 65537 bytes", websocket.ErrMessageTooBig), true},
		{errors.New("failed to get reader: received header with unexpected rsv bits set: false:true:false"), true},
		{errors.New("failed to get reader: received unknown opcode opcode(3)"), true},
		{fmt.Errorf("failed to get reader: %w", websocket.CloseError{Code: websocket.StatusGoingAway}), false},
		{fmt.Errorf("failed to read frame header: %w", io.EOF), false},
		{fmt.Errorf("failed to get reader: %w", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}), false},
	} {
		if got := brokeProtocol(tc.err); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.err, got, tc.want)
		}
	}
}
