package analyzers

import (
	"net/http"
	"testing"
	"time"
)

// keep holds a live heap, so that the collector has something to mark.
var keep [][]byte

// The collector's background share of a real profile is what `go tool
// pprof -focus` on its goroutines' roots shows; a handler that allocates
// makes it, one that only computes does not.
func TestBackgroundGC(t *testing.T) {
	keep = make([][]byte, 2000)
	for i := range keep {
		keep[i] = make([]byte, 4<<10)
	}
	var sink []byte
	mux := http.NewServeMux()
	mux.HandleFunc("/alloc", func(w http.ResponseWriter, r *http.Request) {
		for range 200 {
			sink = make([]byte, 8<<10)
		}
		w.Write(sink[:1])
	})
	mux.HandleFunc("/compute", func(w http.ResponseWriter, r *http.Request) {
		n := 0
		for i := range 400_000 {
			n += i % 7
		}
		w.Write([]byte{byte(n)})
	})
	allocating, _ := loadAndProfile(t, time.Second, mux, "/alloc")
	gc := BackgroundGC(allocating)
	if want := focusShare(allocating, `^runtime\.(gcBgMarkWorker|bgsweep|bgscavenge)$`); gc < want-0.005 || gc > want+0.005 || gc <= 0 {
		t.Errorf("allocating: background GC %.1f%%, pprof -focus %.1f%%", 100*gc, 100*want)
	}
	t.Logf("allocating: background GC %.1f%% of the CPU", 100*gc)
	computing, _ := loadAndProfile(t, time.Second, mux, "/compute")
	if c := BackgroundGC(computing); c >= gc/2 {
		t.Errorf("computing: background GC %.1f%%, allocating %.1f%%: want far less", 100*c, 100*gc)
	}
	if BackgroundGC(nil) != 0 {
		t.Errorf("no profile: want 0")
	}
}
