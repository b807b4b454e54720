// Command hostile is a server that misbehaves on purpose, one way per path,
// for probe's tests: every read probe makes of a target must be bounded,
// and each misbehaviour must be an error of its requests or a warning,
// never probe's end. It listens on loopback and prints its URL.
//
//	/huge-length      Content-Length: 99999999999999999
//	/length-8g        Content-Length: 8000000000, then bytes without end
//	/endless          a body until close that never closes
//	/endless-chunks   chunks without end
//	/gzip-bomb        Content-Encoding: gzip, 1 GiB of zeros in about 1 MB
//	/slow-drip        one byte every 200 ms
//	/endless-header   header lines without end
//	/robots.txt, /sitemap.xml   a sitemap whose locations hold spaces, raw UTF-8 and CR LF
//	/debug/pprof/     an index whose profile never ends and whose heap is a gzip bomb
//	/evil             counts requests that a CR LF in the sitemap smuggled in (/evil-count)
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

var evil atomic.Int64

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bomb := gzipZeros(1 << 30)
	base := "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	mux.HandleFunc("/huge-length", raw("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999\r\n\r\n", nil))
	mux.HandleFunc("/length-8g", raw("HTTP/1.1 200 OK\r\nContent-Length: 8000000000\r\n\r\n", make([]byte, 64<<10)))
	mux.HandleFunc("/endless", raw("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n", make([]byte, 64<<10)))
	mux.HandleFunc("/endless-chunks", raw("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
		[]byte(fmt.Sprintf("%x\r\n%s\r\n", 16<<10, strings.Repeat("x", 16<<10)))))
	mux.HandleFunc("/endless-header", raw("HTTP/1.1 200 OK\r\n", []byte("X-Again: and again and again\r\n")))
	mux.HandleFunc("/gzip-bomb", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "text/plain")
		w.Write(bomb)
	})
	mux.HandleFunc("/slow-drip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		for range 1000 {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(200 * time.Millisecond)
		}
	})
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "User-agent: *\nSitemap: %s/sitemap.xml\n", base)
	})
	mux.HandleFunc("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprintf(w, `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>%[1]s/a b.html</loc></url>
<url><loc>%[1]s/notizen/über.html</loc></url>
<url><loc>%[1]s/x&#13;&#10;GET /evil HTTP/1.1&#13;&#10;X: y</loc></url>
<url><loc>%[1]s/ok.html</loc></url>
</urlset>`, base)
	})
	page := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<!doctype html><html><head><title>%s</title></head><body><p>a page</p></body></html>", r.URL.Path)
	}
	mux.HandleFunc("/", page) // /a b.html, /notizen/über.html, /ok.html
	mux.HandleFunc("/evil", func(w http.ResponseWriter, r *http.Request) { evil.Add(1) })
	mux.HandleFunc("/evil-count", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, evil.Load()) })
	mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/debug/pprof/":
			w.Write([]byte("<html>profile heap allocs goroutine</html>"))
		case "/debug/pprof/heap", "/debug/pprof/allocs":
			w.Write(bomb)
		default: // profile, goroutine: bytes without end
			raw("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n", make([]byte, 64<<10))(w, r)
		}
	})
	fmt.Printf("listening on %s\n", base)
	srv := &http.Server{Handler: mux}
	srv.Serve(ln)
}

// raw answers with head as written, then fill again and again until the
// client goes away (once when fill is nil).
func raw(head string, fill []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		bw := bufio.NewWriter(conn)
		bw.WriteString(head)
		bw.Flush()
		_ = buf
		for fill != nil {
			if _, err := conn.Write(fill); err != nil {
				return
			}
		}
	}
}

// gzipZeros is n zero bytes, gzipped: about a thousandth of n.
func gzipZeros(n int) []byte {
	var b bytes.Buffer
	// BestSpeed: as small a bomb as BestCompression's on zeros, made a
	// dozen times faster (seconds, on a busy machine, before the URL).
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	zero := make([]byte, 1<<20)
	for range n >> 20 {
		zw.Write(zero)
	}
	zw.Close()
	return b.Bytes()
}
