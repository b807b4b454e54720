// Command victim is a small HTTP server with one way to die per endpoint:
// the fuzz tests start it under probe's supervision and check that each
// death is found, classified and shrunk. It listens on -addr or $PORT.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"
)

//go:noinline
func recurse(n int) int {
	var pad [128]byte
	pad[n%128] = byte(n)
	if n <= 0 {
		return int(pad[0])
	}
	return recurse(n-1) + int(pad[1])
}

var (
	sink   [][]byte
	counts = map[string]int{}
)

// notifyWorker computes a count's result and sends it to whoever waits.
func notifyWorker(done chan<- int, n int) { done <- 2 * n }

func intParam(r *http.Request, name string) (int, bool) {
	n, err := strconv.Atoi(r.URL.Query().Get(name))
	return n, err == nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:"+os.Getenv("PORT"), "listen address")
	mute := flag.Bool("mute", false, "accept connections and answer nothing")
	exitAfter := flag.Int64("exit-after", 0, "die (an unrecovered panic) at this many requests; 0: never")
	profiles := flag.Bool("pprof", false, "serve /debug/pprof/ (the leak profile among them)")
	flag.Parse()
	if *mute {
		http.ListenAndServe(*addr, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { select {} }))
		return
	}
	debug.SetMaxStack(8 << 20) // an overflow at depth ~40,000, in milliseconds
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "victim") })
	if *profiles {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
	}
	// A negative count is refused before the worker's result is read: the
	// worker waits forever to send it, a goroutine leaked per request.
	mux.HandleFunc("GET /notify", func(w http.ResponseWriter, r *http.Request) {
		n, ok := intParam(r, "n")
		done := make(chan int)
		go notifyWorker(done, n)
		if !ok || n < 0 {
			http.Error(w, "n: want a count", http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, <-done)
	})
	// Recursion as deep as asked: a fatal stack overflow past the cap.
	mux.HandleFunc("GET /depth", func(w http.ResponseWriter, r *http.Request) {
		n, ok := intParam(r, "n")
		if !ok || n < 0 {
			http.Error(w, "n: want a depth", http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, recurse(n))
	})
	// Allocation of n MiB, touched: out of memory under the memory cap.
	mux.HandleFunc("GET /alloc", func(w http.ResponseWriter, r *http.Request) {
		n, ok := intParam(r, "mb")
		if !ok || n < 0 {
			http.Error(w, "mb: want a size", http.StatusBadRequest)
			return
		}
		for i := 0; i < n; i++ {
			b := make([]byte, 1<<20)
			for j := range b {
				b[j] = 1
			}
			sink = append(sink, b)
		}
		sink = nil
		fmt.Fprintln(w, "ok")
	})
	// An unguarded map: concurrent requests write it at once.
	mux.HandleFunc("GET /count", func(w http.ResponseWriter, r *http.Request) {
		k := r.URL.Query().Get("k")
		for i := 0; i < 2000; i++ {
			counts[k+strconv.Itoa(i%50)]++
		}
		fmt.Fprintln(w, "ok")
	})
	// A negative index panics; net/http recovers it and logs the panic.
	mux.HandleFunc("GET /item", func(w http.ResponseWriter, r *http.Request) {
		n, ok := intParam(r, "i")
		if !ok {
			http.Error(w, "i: want an integer", http.StatusBadRequest)
			return
		}
		items := []string{"a", "b", "c"}
		fmt.Fprintln(w, items[n%3])
	})
	// The same panic after part of the reply went out: the client sees its
	// status, then the body cut short.
	mux.HandleFunc("GET /stream", func(w http.ResponseWriter, r *http.Request) {
		n, ok := intParam(r, "i")
		if !ok {
			http.Error(w, "i: want an integer", http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, "items:")
		w.(http.Flusher).Flush()
		items := []string{"a", "b", "c"}
		fmt.Fprintln(w, items[n%3])
	})
	// A header value of 1000 bytes or more overruns a fixed buffer.
	mux.HandleFunc("GET /region", func(w http.ResponseWriter, r *http.Request) {
		var buf [1000]byte
		buf[len(r.Header.Get("X-Region"))] = 1
		fmt.Fprintln(w, "ok")
	})
	// Any method: one of 16 bytes or more overruns a fixed buffer.
	mux.HandleFunc("/verb", func(w http.ResponseWriter, r *http.Request) {
		var buf [16]byte
		buf[len(r.Method)] = 1
		fmt.Fprintln(w, "ok")
	})
	// A limit whose digits overflow int64 is clamped by ParseInt and the
	// range error ignored: the allocation it sizes panics.
	mux.HandleFunc("GET /limit", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.ParseInt(r.Header.Get("X-Limit"), 10, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) || err == nil && (n <= 0 || n > 1000) {
			http.Error(w, "X-Limit: want a number of items", http.StatusBadRequest)
			return
		}
		items := make([]int, 0, n)
		fmt.Fprintln(w, len(items))
	})
	// A JSON body whose string field is 1000 bytes or more overruns a
	// fixed buffer; a body that is not the JSON it wants gets a 400.
	mux.HandleFunc("POST /json", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			N int64
			S string
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, "want {\"n\": number, \"s\": string}", http.StatusBadRequest)
			return
		}
		var buf [1000]byte
		buf[len(in.S)] = 1
		fmt.Fprintln(w, in.N)
	})
	// Every request succeeds: the baseline for the cost of an input.
	mux.HandleFunc("GET /echo", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, r.URL.Query().Get("n"))
	})
	// Every request fails, whole and on purpose: an error reply, no crash.
	mux.HandleFunc("GET /fail", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "backend unavailable", http.StatusInternalServerError)
	})
	// A zero timeout waits forever.
	mux.HandleFunc("GET /wait", func(w http.ResponseWriter, r *http.Request) {
		n, ok := intParam(r, "ms")
		if !ok || n < 0 {
			http.Error(w, "ms: want a duration", http.StatusBadRequest)
			return
		}
		if n == 0 {
			select {}
		}
		time.Sleep(time.Duration(min(n, 50)) * time.Millisecond)
		fmt.Fprintln(w, "ok")
	})
	var served atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := served.Add(1); *exitAfter > 0 && n == *exitAfter {
			go panic(fmt.Sprintf("victim: exiting after %d requests", n)) // not recoverable by net/http
		}
		mux.ServeHTTP(w, r)
	})
	if err := http.ListenAndServe(*addr, handler); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
