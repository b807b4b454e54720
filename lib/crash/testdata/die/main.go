// Command die ends itself the way its argument says: the crash classifier's
// test builds it and classifies each death. It imports little, so that no
// library goroutine hides a deadlock from the runtime.
package main

import (
	"os"
	"runtime/debug"
	"sync"
	"syscall"
	"time"
)

var sink []byte

//go:noinline
func recurse(n int) int {
	var pad [256]byte
	pad[n%256] = byte(n)
	return recurse(n+1) + int(pad[0])
}

func main() {
	switch os.Args[1] {
	case "stack-overflow":
		debug.SetMaxStack(8 << 20)
		recurse(0)
	case "concurrent-map-write":
		m := map[int]int{}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := 0; ; i++ {
					m[i%64+g] = i
				}
			})
		}
		wg.Wait()
	case "deadlock":
		var mu sync.Mutex
		mu.Lock()
		mu.Lock()
	case "panic":
		panic("boom")
	case "out-of-memory":
		// Under a 1 GiB address-space cap: the runtime dies of it at once.
		lim := &syscall.Rlimit{Cur: 1 << 30, Max: 1 << 30}
		syscall.Setrlimit(syscall.RLIMIT_AS, lim)
		for {
			sink = append(sink, make([]byte, 64<<20)...)
			time.Sleep(time.Millisecond)
		}
	}
}
