package contention

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// lockedStore is a handler's shared state behind one mutex, held while a
// request works: requests queue on it.
type lockedStore struct {
	mu sync.Mutex
	n  int
}

func (s *lockedStore) serveLocked(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	until := time.Now().Add(2 * time.Millisecond)
	for time.Now().Before(until) {
		s.n++
	}
	io.WriteString(w, "ok")
}

// waitInBackground is a goroutine outside any request that waits on a
// channel the whole run: no request waited there.
func waitInBackground(done <-chan struct{}, finished chan<- struct{}) {
	<-done
	close(finished)
}

// profileOf is the named runtime profile, as a target's /debug/pprof serves it.
func profileOf(t *testing.T, name string) *profile.Profile {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup(name).WriteTo(&b, 0); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Requests that queue on a handler's mutex are a lock finding on the
// handler, with the holder named from the mutex profile; a background
// goroutine's long wait on a channel is no request's and no finding.
func TestFindingsOfRealBlockAndMutexProfiles(t *testing.T) {
	runtime.SetBlockProfileRate(1)
	runtime.SetMutexProfileFraction(1)
	t.Cleanup(func() { runtime.SetBlockProfileRate(0); runtime.SetMutexProfileFraction(0) })
	store := &lockedStore{}
	srv := httptest.NewServer(http.HandlerFunc(store.serveLocked))
	defer srv.Close()
	done, finished := make(chan struct{}), make(chan struct{})
	go waitInBackground(done, finished)

	var took atomic.Int64 // all the requests' time, ns
	var wg sync.WaitGroup
	stop := time.Now().Add(time.Second)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				began := time.Now()
				resp, err := srv.Client().Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				took.Add(int64(time.Since(began)))
			}
		}()
	}
	wg.Wait()
	close(done)
	<-finished
	block, mutex := profileOf(t, "block"), profileOf(t, "mutex")

	fs := Findings(mutex, block, time.Duration(took.Load()))
	var lock bool
	for _, f := range fs {
		t.Logf("%s %s %.0f%%: %s", f.Class, f.OwnFrame, 100*f.WaitShare, f.Evidence)
		if strings.Contains(f.OwnFrame, "waitInBackground") {
			t.Errorf("a background goroutine's wait was taken for a request's: %s", f.Evidence)
		}
		if f.Class == "contention" && strings.Contains(f.OwnFrame, "serveLocked") && strings.Contains(f.Evidence, "on a lock") &&
			strings.Contains(f.Evidence, "held by") {
			lock = true
			// Eight clients on one lock: most of each request's time is
			// the queue, never less than a fifth of it.
			if f.WaitShare < 0.2 {
				t.Errorf("the queue on the lock is %.0f%% of the requests' time", 100*f.WaitShare)
			}
		}
	}
	if !lock {
		t.Errorf("no lock finding on serveLocked among %d findings", len(fs))
	}
	if fs := Findings(nil, nil, time.Second); fs != nil {
		t.Errorf("no profiles, findings %+v", fs)
	}
}

// A request held on a channel is in the "channel" state; the states of a
// real goroutine profile's requests add up to all of their time, and a
// goroutine outside any request counts for none of it.
func TestWallStatesOfARealProfile(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	defer srv.Close()
	done, finished := make(chan struct{}), make(chan struct{})
	go waitInBackground(done, finished)
	go func() {
		if resp, err := srv.Client().Get(srv.URL); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	states := WallStates(profileOf(t, "goroutine"))
	close(release)
	close(done)
	<-finished
	var sum float64
	for _, v := range states {
		sum += v
	}
	if states["channel"] == 0 || sum < 0.999 || sum > 1.001 {
		t.Errorf("states %v (sum %.3f): want the held request's channel wait among states that add up to 1", states, sum)
	}
}
