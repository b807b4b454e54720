package main

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"time"
)

// -fault garbage: every connection is upgraded and framed by hand, so that
// some can be sent what no WebSocket library would send. After its ready,
// connection n (in order of arrival, from 1) gets, by n mod 10:
//
//	1  a binary message of random bytes (no marker): an other message, stays up
//	2  a text message with a broken marker, pev-3-x-: garbage, stays up
//	3  a message of 256 MiB, far over probe's read limit: garbage, closed
//	4  a frame with the reserved bit RSV2 set: garbage, closed
//	5  a frame of the reserved opcode 3: garbage, closed
//
// and every event of its room after, as the others do (a closed one none).

const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// upgradeRaw answers the handshake itself and hands back the connection.
func upgradeRaw(w http.ResponseWriter, r *http.Request) (net.Conn, *bufio.ReadWriter, bool) {
	key := r.Header.Get("Sec-WebSocket-Key")
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || key == "" {
		http.Error(w, "want a WebSocket upgrade", http.StatusBadRequest)
		return nil, nil, false
	}
	c, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, nil, false
	}
	sum := sha1.Sum([]byte(key + wsGUID))
	rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
		base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n")
	return c, rw, rw.Flush() == nil
}

// frameHeader is a server's (unmasked) frame header: first byte b0 (FIN,
// RSV bits, opcode) and the payload's length.
func frameHeader(b0 byte, n uint64) []byte {
	switch {
	case n < 126:
		return []byte{b0, byte(n)}
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16([]byte{b0, 126}, uint16(n))
	default:
		return binary.BigEndian.AppendUint64([]byte{b0, 127}, n)
	}
}

func writeFrame(c net.Conn, rw *bufio.ReadWriter, b0 byte, payload []byte) error {
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	rw.Write(frameHeader(b0, uint64(len(payload))))
	rw.Write(payload)
	return rw.Flush()
}

const (
	opText   = 0x81 // FIN and opcode 1
	opBinary = 0x82
)

func (h *hub) serveGarbage(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("token") != token {
		http.Error(w, "wrong token", http.StatusUnauthorized)
		return
	}
	c, rw, ok := upgradeRaw(w, r)
	if !ok {
		return
	}
	defer c.Close()
	room := r.URL.Query().Get("room")
	h.mu.Lock()
	h.next++
	n := h.next
	s := &sub{id: n, send: make(chan []byte, 1024)}
	h.rooms[room] = append(h.rooms[room], s)
	h.mu.Unlock()
	defer h.leave(room, s)
	// What the client sends (its close frame) is read and dropped; its end
	// ends the connection.
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		buf := make([]byte, 4096)
		for {
			if _, err := rw.Read(buf); err != nil {
				return
			}
		}
	}()
	if writeFrame(c, rw, opText, []byte(`{"type":"ready"}`)) != nil {
		return
	}
	switch n % 10 {
	case 1:
		junk := make([]byte, 512)
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		for i := range junk {
			junk[i] = byte(rng.UintN(256))
		}
		writeFrame(c, rw, opBinary, junk)
	case 2:
		writeFrame(c, rw, opText, []byte(`{"type":"event","data":"pev-3-x-"}`))
	case 3:
		// Announced as 256 MiB, streamed until the client stops reading.
		c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		rw.Write(frameHeader(opText, 256<<20))
		chunk := make([]byte, 32<<10)
		for range (256 << 20) / len(chunk) {
			if _, err := rw.Write(chunk); err != nil {
				break
			}
		}
		rw.Flush()
		<-gone
		return
	case 4:
		writeFrame(c, rw, opText|0x20, []byte("x")) // RSV2
	case 5:
		writeFrame(c, rw, 0x80|0x3, []byte("x")) // opcode 3: reserved
	}
	for {
		select {
		case <-gone:
			return
		case m := <-s.send:
			if writeFrame(c, rw, opText, m) != nil {
				return
			}
		}
	}
}
