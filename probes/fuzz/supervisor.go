package fuzz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/probehq/probe/lib/redirect"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

// startAttempts is how often a restart is tried before the target counts
// as one that will not start again.
const startAttempts = 3

// errStop ends the search: the target cannot be started again.
var errStop = errors.New("stop")

// supervisor keeps one target process running: it starts it, starts a
// fresh one after every death, kills one that hangs, and remembers which
// inputs were in flight in each generation (a process's life), so that a
// death can be laid at their door. It knows nothing of the search.
type supervisor struct {
	start func(ctx context.Context, stderr io.Writer) (*target.Child, error)
	open  func(ctx context.Context, child *target.Child) (http.Header, error) // nil: nothing to open

	mu       sync.Mutex
	child    *target.Child
	header   http.Header // what open returned for child
	watch    *panicWatch
	gen      int
	restarts int
	startErr error
	inflight map[uint64]result.FuzzInput
	nextID   uint64
	reported map[int]bool // generations whose death was recorded
	killed   map[int]bool // generations probe killed itself (after a hang, or to start afresh)
	fresh    map[int]bool // killed to start afresh: not a restart the input caused
}

func newSupervisor(start func(context.Context, io.Writer) (*target.Child, error),
	open func(context.Context, *target.Child) (http.Header, error)) *supervisor {
	return &supervisor{start: start, open: open, inflight: map[uint64]result.FuzzInput{}, reported: map[int]bool{}, killed: map[int]bool{},
		fresh: map[int]bool{}}
}

// ensure returns the running target, starting a fresh one after a death.
func (s *supervisor) ensure(ctx context.Context) (*target.Child, int, *panicWatch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.startErr != nil {
		return nil, 0, nil, errStop
	}
	if s.child != nil {
		select {
		case <-s.child.Exited():
		default:
			return s.child, s.gen, s.watch, nil
		}
		if !s.fresh[s.gen] {
			s.restarts++
		}
	}
	w := newPanicWatch()
	child, header, err := s.startAndOpen(ctx, w)
	// A restart can fail for reasons of the moment (the fresh port taken
	// between probing and binding it): only a target that fails to start
	// startAttempts times running ends the search.
	for try := 1; err != nil && s.child != nil && try < startAttempts && ctx.Err() == nil; try++ {
		w = newPanicWatch()
		child, header, err = s.startAndOpen(ctx, w)
	}
	if err != nil {
		if s.child != nil && ctx.Err() == nil {
			s.startErr = err // it started once: say so in the report and stop
		}
		return nil, 0, nil, err
	}
	s.child, s.header, s.watch = child, header, w
	s.gen++
	s.inflight = map[uint64]result.FuzzInput{}
	return child, s.gen, w, nil
}

// startAndOpen starts a process and opens what its requests need; a
// process that cannot be opened is killed, and the start counts as failed.
func (s *supervisor) startAndOpen(ctx context.Context, w io.Writer) (*target.Child, http.Header, error) {
	child, err := s.start(ctx, w)
	if err != nil || s.open == nil {
		return child, nil, err
	}
	header, err := s.open(ctx, child)
	if err != nil {
		child.Kill()
		return nil, nil, err
	}
	return child, header, nil
}

// headerOf is the header opened for generation gen (nil once it is gone:
// its requests fail and the next ensure opens a fresh one).
func (s *supervisor) headerOf(gen int) http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen {
		return nil
	}
	return s.header
}

// kill ends the target of generation gen (a hang), so the next ensure
// starts a fresh one.
func (s *supervisor) kill(gen int) {
	s.mu.Lock()
	c := s.child
	same := s.gen == gen
	s.killed[gen] = true
	s.mu.Unlock()
	if same && c != nil {
		c.Kill()
	}
}

// restartFresh ends the running target, so that the next try starts a new
// one with no work of earlier requests left in it.
func (s *supervisor) restartFresh() {
	s.mu.Lock()
	gen := s.gen
	s.fresh[gen] = true
	s.mu.Unlock()
	s.kill(gen)
}

func (s *supervisor) wasKilled(gen int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.killed[gen]
}

func (s *supervisor) track(gen int, in result.FuzzInput) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	if s.gen == gen {
		s.inflight[s.nextID] = in
	}
	return s.nextID
}

func (s *supervisor) untrack(id uint64) {
	s.mu.Lock()
	delete(s.inflight, id)
	s.mu.Unlock()
}

// suspects are the inputs in flight when generation gen died, oldest
// first (a stack overflow or a runaway allocation takes time), and whether
// this caller is the first to report the death.
func (s *supervisor) suspects(gen int) ([]result.FuzzInput, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reported[gen] || s.gen != gen {
		return nil, false
	}
	s.reported[gen] = true
	ids := make([]uint64, 0, len(s.inflight))
	for id := range s.inflight {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([]result.FuzzInput, len(ids))
	for i, id := range ids {
		out[i] = s.inflight[id]
	}
	return out, true
}

// restartCount is how many times a death made it start the target again.
func (s *supervisor) restartCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// failedStart is why the target would not start again, or nil.
func (s *supervisor) failedStart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startErr
}

// stop kills the running target for good.
func (s *supervisor) stop() {
	s.mu.Lock()
	c := s.child
	s.mu.Unlock()
	if c != nil {
		c.Kill()
	}
}

// answers checks that a freshly started target answers HTTP at all: a
// target that never answers would otherwise look like a hang on every input.
func answers(ctx context.Context, child *target.Child, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", child.URL+"/", nil)
	if err != nil {
		return err
	}
	// Any reply will do, a 3xx too: nothing follows it (lib/redirect).
	resp, err := (&http.Client{CheckRedirect: redirect.Status}).Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("the target at %s accepts connections but answered no request within %s", child.URL, timeout)
		}
		return fmt.Errorf("the target at %s does not answer: %v", child.URL, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return nil
}
