package h1

import "testing"

// engine is how a test's connections run: on Go's netpoller, called from
// the test's goroutine, or in a Loop, called from within its one client.
type engine struct {
	loop *Loop
	fns  chan func()
	done chan struct{}
}

// engines runs test once on each engine.
func engines(t *testing.T, test func(t *testing.T, e *engine)) {
	t.Run("netpoller", func(t *testing.T) { test(t, &engine{}) })
	t.Run("loop", func(t *testing.T) { test(t, loopEngine(t)) })
}

// loopEngine is a running Loop whose one client runs what run gives it,
// one function at a time, until the test ends.
func loopEngine(t *testing.T) *engine {
	l, err := NewLoop()
	if err != nil {
		t.Skip(err)
	}
	e := &engine{loop: l, fns: make(chan func()), done: make(chan struct{})}
	l.Go(func() {
		for fn := range e.fns {
			fn()
			e.done <- struct{}{}
		}
	})
	ended := make(chan struct{})
	go func() { l.Run(); close(ended) }()
	t.Cleanup(func() { close(e.fns); <-ended })
	return e
}

// conn is c on e.
func (e *engine) conn(c *Conn) *Conn {
	c.Loop = e.loop
	return c
}

// run runs fn on e.
func (e *engine) run(fn func()) {
	if e.loop == nil {
		fn()
		return
	}
	e.fns <- fn
	<-e.done
}

// do is c.Do on e.
func (e *engine) do(c *Conn, req *Request, resp *Response) (err error) {
	e.run(func() { err = c.Do(req, resp) })
	return err
}
