package ws

import (
	"bytes"
	"io"
	"strconv"
	"testing"
	"testing/iotest"
	"time"
)

// parseMarkerByParseInt is a reference parser on strconv.ParseInt, the way
// markers were read before digits were summed in place, written apart from
// the faster one (no shared steps to share a mistake): they must agree
// byte for byte.
func parseMarkerByParseInt(b []byte) (room, seq int, sent int64, n int, ok bool) {
	var nums []int64
	for {
		digits := min(19, len(b)-n-len(bytes.TrimLeft(b[n:], "0123456789")))
		v, err := strconv.ParseInt(string(b[n:n+digits]), 10, 64)
		n += digits
		if err != nil { // no digits, or more than an int64 holds
			return 0, 0, 0, n, false
		}
		if nums = append(nums, v); len(nums) == 3 {
			break
		}
		if !bytes.HasPrefix(b[n:], []byte("-")) {
			return 0, 0, 0, n, false
		}
		n++
	}
	if max(nums[0], nums[1]) > 1<<30 {
		return 0, 0, 0, n, false
	}
	return int(nums[0]), int(nums[1]), nums[2], n, true
}

func TestParseMarkerAgreesWithParseInt(t *testing.T) {
	inputs := []string{
		"", "1-2-3", "0-0-0", `12-345-6789"}`, "1-2", "1-2-", "-1-2-3", "1--2-3",
		"1073741824-1-1", "1073741825-1-1", "1-1073741825-1",
		"1-2-9223372036854775807", "1-2-9223372036854775808", "1-2-9999999999999999999",
		"1-2-12345678901234567890123", "99999999999999999999-1-1", "1-2-3pev-4-5-6", "7-8-x",
	}
	for _, in := range inputs {
		r1, s1, t1, n1, ok1 := parseMarker([]byte(in))
		r2, s2, t2, n2, ok2 := parseMarkerByParseInt([]byte(in))
		if r1 != r2 || s1 != s2 || t1 != t2 || n1 != n2 || ok1 != ok2 {
			t.Errorf("%q: got %d %d %d %d %v, want %d %d %d %d %v", in, r1, s1, t1, n1, ok1, r2, s2, t2, n2, ok2)
		}
	}
}

func FuzzParseMarkerAgreesWithParseInt(f *testing.F) {
	f.Add([]byte("12-345-6789"))
	f.Add([]byte("1-2-9223372036854775808"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r1, s1, t1, n1, ok1 := parseMarker(b)
		r2, s2, t2, n2, ok2 := parseMarkerByParseInt(b)
		if r1 != r2 || s1 != s2 || t1 != t2 || n1 != n2 || ok1 != ok2 {
			t.Fatalf("%q: got %d %d %d %d %v, want %d %d %d %d %v", b, r1, s1, t1, n1, ok1, r2, s2, t2, n2, ok2)
		}
	})
}

func TestReadAllFillsTheBufferItIsGiven(t *testing.T) {
	msg := bytes.Repeat([]byte("pev-1-2-3 "), 1000) // 10,000 bytes, past any one read
	buf := make([]byte, 0, 64<<10)
	got, err := readAll(iotest.OneByteReader(bytes.NewReader(msg)), buf)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("err %v, %d bytes, want %d", err, len(got), len(msg))
	}
	if &got[0] != &buf[:1][0] {
		t.Error("a buffer large enough was not the one filled")
	}
	small, err := readAll(bytes.NewReader(msg), make([]byte, 0, 16))
	if err != nil || !bytes.Equal(small, msg) {
		t.Fatalf("a small buffer: err %v, %d bytes", err, len(small))
	}
	if _, err := readAll(iotest.ErrReader(io.ErrUnexpectedEOF), nil); err != io.ErrUnexpectedEOF {
		t.Errorf("a failing read: %v", err)
	}
}

// benchRun is a run of two rooms and a connection in room 0, for the
// receipt path.
func benchRun(events, rounds int) (*run, *conn) {
	r := &run{o: Options{Events: events, Rooms: 2, Rounds: rounds}, perRoom: events * rounds}
	r.makeEventSets()
	for room := range 2 {
		for seq := range r.perRoom {
			r.markAccepted(room, seq)
		}
	}
	r.addRounds(rounds)
	c := &conn{away: -1, seen: make([]uint64, words(r.perRoom)), maxSeq: -1}
	return r, c
}

func TestScanCountsEachMarkerOnce(t *testing.T) {
	r, c := benchRun(4, 1)
	msg := []byte(`{"a":"pev-0-0-5"} pev-0-1-5 pev-0-1-5 pev-0-9-5 pev-1-2-5 pev-x`)
	r.scan(c, msg, 10*time.Millisecond)
	if r.delivered.Load() != 2 || c.dup != 1 || c.misrouted != 1 || r.garbage.Load() != 2 {
		t.Fatalf("delivered %d dup %d misrouted %d garbage %d", r.delivered.Load(), c.dup, c.misrouted, r.garbage.Load())
	}
}

// BenchmarkScanOneDelivery is the reader's work for one message of one
// event after the socket's read: the marker scan and the receipt.
func BenchmarkScanOneDelivery(b *testing.B) {
	const events = 1 << 16
	r, c := benchRun(events, 1)
	msgs := make([][]byte, events)
	for i := range msgs {
		msgs[i] = []byte(`{"id":"` + Marker(0, i, time.Millisecond) + `","room":"room-0","note":"a note of a few words"}`)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%events == 0 && i > 0 {
			clear(c.seen)
			c.maxSeq = -1
		}
		r.scan(c, msgs[i%events], 2*time.Millisecond)
	}
}
