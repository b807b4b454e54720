package h1

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/dustin/go-humanize"
)

// allowance is what each buffer may hold without drawing on the Budget:
// most replies are far smaller, and need no accounting.
const allowance = 1 << 20

// DefaultBudget is what the connections of a run may hold together for
// replies beyond their allowances: with 32 clients and endless replies,
// probe stays within a few hundred MB, not 32 × MaxBody.
const DefaultBudget = 96 << 20

// Allowance is what each of a connection's two buffers (the reply, its
// decoding) holds without the budget.
const Allowance = allowance

// Budget bounds the bytes that many connections' reply buffers hold at
// once beyond an allowance each. It never blocks: a reply that would
// exceed it is that request's error, with what to raise.
type Budget struct {
	free  atomic.Int64
	total int64
}

// NewBudget is a budget of n bytes.
func NewBudget(n int64) *Budget {
	b := &Budget{total: n}
	b.free.Store(n)
	return b
}

func (b *Budget) take(n int64) bool {
	for {
		f := b.free.Load()
		if f < n {
			return false
		}
		if b.free.CompareAndSwap(f, f-n) {
			return true
		}
	}
}

func (b *Budget) give(n int64) { b.free.Add(n) }

// BudgetError is a reply that the shared budget could not hold.
type BudgetError struct{ Total int64 }

func (e *BudgetError) Error() string {
	return fmt.Sprintf("reply beyond the %s all clients may hold at once (--reply-memory)", humanize.IBytes(uint64(e.Total)))
}

// body reads a reply's body into a buffer bounded per reply (max) and,
// with a budget, across connections.
type body struct {
	max    int
	budget *Budget
	held   int64  // taken from budget for buf's capacity
	want   int    // the size the buffer is being filled to, when known (readFull)
	buf    []byte // Decode's buffer
}

// room makes space in b for extra more bytes, growing by doubling up to
// max, charging the budget for capacity beyond the allowance.
func (l *body) room(b []byte, extra int) ([]byte, error) {
	need := len(b) + extra
	if need > l.max {
		return b, &TooLargeError{What: "reply", Limit: l.max}
	}
	if cap(b) >= need {
		return b, nil
	}
	// Doubling while small; by a quarter past the allowance, where the
	// budget pays for capacity not yet used.
	grown := 2 * cap(b)
	if cap(b) >= allowance {
		grown = cap(b) + cap(b)/4
	}
	newCap := min(max(need, grown, 4<<10), l.max)
	if l.want >= need {
		newCap = min(newCap, l.want) // no more than was reserved
	}
	if over := int64(newCap-allowance) - l.held; over > 0 && l.budget != nil {
		if !l.budget.take(over) {
			return b, &BudgetError{Total: l.budget.total}
		}
		l.held += over
	}
	nb := make([]byte, len(b), newCap)
	copy(nb, b)
	return nb, nil
}

// reserve takes from the budget what a buffer of size bytes needs beyond
// the allowance and what it holds.
func (l *body) reserve(size int) error {
	if over := int64(size-allowance) - l.held; over > 0 && l.budget != nil {
		if !l.budget.take(over) {
			return &BudgetError{Total: l.budget.total}
		}
		l.held += over
	}
	return nil
}

// giveBack returns what the buffer held to the budget (it was dropped).
func (l *body) giveBack() {
	if l.budget != nil && l.held > 0 {
		l.budget.give(l.held)
	}
	l.held = 0
}

// readWhole reads a body of n bytes (a Content-Length) into b. The budget
// is taken for the whole length at once, before its bytes come (the
// memory still grows only as they do): of many large replies at once,
// those that fit are read whole and the rest fail now, rather than all
// growing part way and all failing.
func (l *body) readWhole(r io.Reader, b []byte, n int) ([]byte, error) {
	if len(b)+n > l.max {
		return b, &TooLargeError{What: "reply", Limit: l.max}
	}
	if err := l.reserve(len(b) + n); err != nil {
		return b, err
	}
	l.want = len(b) + n
	defer func() { l.want = 0 }()
	return l.readFull(r, b, n)
}

// readFull appends n bytes of r to b, growing as they arrive: a
// Content-Length that lies costs no memory before its bytes come. A chunk
// reserves nothing ahead, so the buffer grows by its usual steps, not by
// each chunk's size.
func (l *body) readFull(r io.Reader, b []byte, n int) ([]byte, error) {
	if len(b)+n > l.max {
		return b, &TooLargeError{What: "reply", Limit: l.max}
	}
	for n > 0 {
		step := min(n, max(64<<10, len(b)))
		var err error
		if b, err = l.room(b, step); err != nil {
			return b, err
		}
		start := len(b)
		b = b[:start+step]
		if _, err := io.ReadFull(r, b[start:]); err != nil {
			return b[:start], err
		}
		n -= step
	}
	return b, nil
}

// readAll appends r to its end to b, within the bounds; end (nil: none)
// is told each time more came.
func (l *body) readAll(r io.Reader, b []byte, end *streamEnd) ([]byte, error) {
	for {
		if len(b) == l.max {
			// A reply that ends exactly at max fits; one byte more does not.
			var one [1]byte
			switch _, err := io.ReadFull(r, one[:]); {
			case errors.Is(err, io.EOF):
				return b, nil
			case err != nil:
				return b, err
			}
			return b, &TooLargeError{What: "reply", Limit: l.max}
		}
		var err error
		if b, err = l.room(b, min(32<<10, l.max-len(b))); err != nil {
			return b, err
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if n > 0 {
			end.check(b)
		}
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}
