// Package tick is a ticker that calls a function until it is stopped.
package tick

import (
	"sync"
	"time"
)

// Every calls f with the time about every d, on a goroutine of its own,
// until stop is called; stop returns once f has returned for good. The
// progress lines and the process sampler tick on it.
func Every(d time.Duration, f func(now time.Time)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				f(now)
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}
