package main

import (
	"bytes"
	stdgzip "compress/gzip"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/valyala/fasthttp"
)

// The clean endpoints: work that looks like waste and is not. None may get
// a load-time claim: they decode the request itself, compute a function of
// a parameter, make a nonce, do arithmetic or format a line, or serve what
// was prepared at start.

func nonce() uint64 {
	var b [8]byte
	rand.Read(b[:])
	var n uint64
	for _, c := range b {
		n = n<<8 | uint64(c)
	}
	return n
}

var shuffleSeed atomic.Uint64

// shuffledSidebar is the same links in a different order per request.
func shuffledSidebar() string {
	links := []string{"home", "notes", "tags", "about", "feed", "search", "archive", "random"}
	s := shuffleSeed.Add(1)
	for i := len(links) - 1; i > 0; i-- {
		j := int((s*2654435761 + uint64(i)*40503) % uint64(i+1))
		links[i], links[j] = links[j], links[i]
	}
	var b strings.Builder
	for _, l := range links {
		fmt.Fprintf(&b, `<a href="/%s">%s</a>`, l, l)
	}
	return b.String()
}

// prepareClean builds at start what the clean static endpoints serve.
func (d *data) prepareClean() {
	d.page = []byte(strings.Repeat("<p>The same page every time, compressed once at start.</p>\n", 800))
	var b bytes.Buffer
	zw := stdgzip.NewWriter(&b)
	zw.Write(d.page)
	zw.Close()
	d.pageGz = b.Bytes()
	d.pageJSON, _ = json.Marshal(d.listing())
}

type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      int             `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

var tokenKey = []byte("zoo-secret-key")

var cheapCount atomic.Uint64

func (d *data) clean() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		// decoding the request's own JSON body
		"/clean/rpc": func(w http.ResponseWriter, r *http.Request) {
			var req rpcRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			var params map[string]any
			json.Unmarshal(req.Params, &params)
			reply(w, "application/json", []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"method":%q,"params":%d}}`, req.ID, req.Method, len(params))))
		},
		// a token derived from a parameter: a pure function of the input
		"/clean/token": func(w http.ResponseWriter, r *http.Request) {
			user := r.URL.Query().Get("user")
			sum := []byte(user)
			for range 2000 {
				m := hmac.New(sha256.New, tokenKey)
				m.Write(sum)
				sum = m.Sum(nil)
			}
			reply(w, "application/json", []byte(fmt.Sprintf(`{"user":%q,"token":%q}`, user, hex.EncodeToString(sum))))
		},
		// a report computed over the notes of a month: a function of the input
		"/clean/report": func(w http.ResponseWriter, r *http.Request) {
			month := r.URL.Query().Get("month")
			words, count := 0, 0
			byTag := map[string]int{}
			for _, n := range d.notes {
				if n.Month != month {
					continue
				}
				count++
				words += n.Words
				for _, t := range n.Tags {
					byTag[t]++
				}
			}
			b, _ := json.Marshal(map[string]any{"month": month, "notes": count, "words": words, "tags": byTag})
			reply(w, "application/json", b)
		},
		// arithmetic: a loop over numbers, no data walked
		"/clean/arith": func(w http.ResponseWriter, r *http.Request) {
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			reply(w, "text/plain", []byte(strconv.FormatFloat(series(n), 'f', 10, 64)))
		},
		// a line formatted per request from its input
		"/clean/logline": func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			var b strings.Builder
			for i := range 300 {
				fmt.Fprintf(&b, "%s level=info user=%s request=%d elapsed=%.3fms path=%q\n", "2026-11-30T12:00:00Z", q.Get("user"), i, float64(i)*0.137, r.URL.Path)
			}
			reply(w, "text/plain", []byte(b.String()))
		},
		// a random value hashed per request: nothing to cache
		"/clean/random": func(w http.ResponseWriter, r *http.Request) {
			var b [32]byte
			rand.Read(b[:])
			sum := b[:]
			for range 2000 {
				s := sha256.Sum256(sum)
				sum = s[:]
			}
			reply(w, "text/plain", []byte(hex.EncodeToString(sum)))
		},
		// prepared at start: compressed and encoded once
		"/clean/static-gzip": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			reply(w, "text/html", d.pageGz)
		},
		"/clean/static-json": func(w http.ResponseWriter, r *http.Request) { reply(w, "application/json", d.pageJSON) },
		// the note of an id: an index lookup, a function of the input
		"/clean/note": func(w http.ResponseWriter, r *http.Request) {
			id, _ := strconv.Atoi(r.URL.Query().Get("id"))
			if id < 0 || id >= len(d.notes) {
				http.NotFound(w, r)
				return
			}
			b, _ := json.Marshal(d.notes[id])
			reply(w, "application/json", b)
		},
		// a cheap endpoint, loaded after /waste/allocate-xml: a counter, so
		// its replies differ
		"/clean/cheap": func(w http.ResponseWriter, r *http.Request) {
			x := 0
			for i := range 20000 {
				x += i % 7
			}
			reply(w, "text/plain", []byte(strconv.Itoa(x)+" "+strconv.FormatUint(cheapCount.Add(1), 10)))
		},
		// the tags of one note, sorted per request: a function of the input
		"/clean/tags": func(w http.ResponseWriter, r *http.Request) {
			tag := r.URL.Query().Get("tag")
			ids := slices.Clone(d.byTag[tag])
			slices.SortFunc(ids, func(a, b int) int { return strings.Compare(d.notes[a].Title, d.notes[b].Title) })
			b, _ := json.Marshal(ids[:min(len(ids), 50)])
			reply(w, "application/json", b)
		},
	}
}

// series sums an alternating series of n terms: arithmetic only.
func series(n int) float64 {
	s := 0.0
	for k := range n {
		s += math.Pow(-1, float64(k)) / float64(2*k+1)
	}
	return 4 * s
}

// fast is the fasthttp server: a JSON-RPC endpoint that decodes the body it
// gets (clean) and a page compressed per request (waste), so that request
// handling is seen under fasthttp's serving frames.
func (d *data) fast(ctx *fasthttp.RequestCtx) {
	switch string(ctx.Path()) {
	case "/rpc":
		var req rpcRequest
		if err := json.Unmarshal(ctx.PostBody(), &req); err != nil {
			ctx.Error(err.Error(), 400)
			return
		}
		var params map[string]any
		json.Unmarshal(req.Params, &params)
		ctx.SetContentType("application/json")
		fmt.Fprintf(ctx, `{"jsonrpc":"2.0","id":%d,"result":{"method":%q,"params":%d}}`, req.ID, req.Method, len(params))
	case "/gzip":
		var b bytes.Buffer
		zw := stdgzip.NewWriter(&b)
		zw.Write(d.page)
		zw.Close()
		ctx.Response.Header.Set("Content-Encoding", "gzip")
		ctx.SetContentType("text/html")
		ctx.SetBody(b.Bytes())
	default:
		ctx.NotFound()
	}
}
