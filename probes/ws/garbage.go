package ws

import (
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/coder/websocket"
)

// brokeProtocol says whether a read's error is the server's garbage: a
// message over the read limit or a frame that is no valid WebSocket
// (reserved bits or opcodes, a bad close payload, …; the library closes
// the connection with 1009 or 1002). A close the server sent, or the
// connection's end (EOF, reset), is not: that is a connection lost.
func brokeProtocol(err error) bool {
	if errors.Is(err, websocket.ErrMessageTooBig) {
		return true
	}
	if websocket.CloseStatus(err) != -1 {
		return false // the server's close frame
	}
	var op *net.OpError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.As(err, &op):
		return false
	}
	return true
}
