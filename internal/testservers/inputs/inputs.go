// Package inputs is an HTTP server of work keyed (or not) on each input a
// request carries, for the tests of probe's experiment: real code whose
// CPU profiles the analyzers read.
//
//	/config?page=N   decodes the same constant settings on every request, whatever the page
//	                 (the reply changes with the page and carries a nonce): load-time work
//	/user?name=X     the trap: decodes the settings user X saved, a document of another size per user
//	/sorted?user=N   the trap of equal cost: sorts user N's own 20,000 numbers, another reply per user
//	/catalog?page=N  a trap: decodes the catalogue of the language the client asks for (Accept-Language)
//	/me?page=N       a trap: decodes the settings of the user its cookie names (no cookie: 401)
//	/stamped?page=N  a page stamped and compressed per request: gzip over bytes that change every time
//	/gzpage?page=N   the same without the stamp: each page's reply the same every time
package inputs

import (
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

type entry struct {
	Name  string   `json:"name"`
	Value float64  `json:"value"`
	Tags  []string `json:"tags"`
}

// settingsJSON is a JSON document of n settings.
func settingsJSON(n int) []byte {
	es := make([]entry, n)
	for i := range es {
		es[i] = entry{Name: fmt.Sprintf("setting-%d", i), Value: float64(i) * 1.5, Tags: []string{"a", "b", "c"}}
	}
	b, _ := json.Marshal(es)
	return b
}

// DecodeSettings is the heavy work of the decoding endpoints: the same
// function, so that only what it is fed tells them apart.
func DecodeSettings(doc []byte) int {
	var v []map[string]any
	if err := json.Unmarshal(doc, &v); err != nil {
		panic(err)
	}
	return len(v)
}

// UsersNumbers are user n's own numbers, as the user stored them: 20,000
// of them for every user, each user's drawn from a source seeded by n.
func UsersNumbers(n int) []int {
	r := mrand.New(mrand.NewPCG(uint64(n), 0x5eed))
	out := make([]int, 20000)
	for i := range out {
		out[i] = r.IntN(1_000_000)
	}
	return out
}

// SortedOf is the user's numbers in order, sorted again on every request
// (a copy: the stored order stays as the user left it).
func SortedOf(stored []int) []int {
	nums := slices.Clone(stored)
	slices.Sort(nums)
	return nums
}

func nonce() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Routes serves the endpoints on mux.
func Routes(mux *http.ServeMux) {
	constant := settingsJSON(800)
	saved := map[string][]byte{"ann": settingsJSON(150), "bob": settingsJSON(600), "cy": settingsJSON(1500)}
	mux.HandleFunc("/config", func(w http.ResponseWriter, r *http.Request) {
		n := DecodeSettings(constant)
		fmt.Fprintf(w, "page %s of %d settings, nonce %s\n", r.URL.Query().Get("page"), n, nonce())
	})
	mux.HandleFunc("/user", func(w http.ResponseWriter, r *http.Request) {
		doc, ok := saved[r.URL.Query().Get("name")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "%d settings of %s, nonce %s\n", DecodeSettings(doc), r.URL.Query().Get("name"), nonce())
	})
	catalogues := map[string][]byte{"en": settingsJSON(800), "fr": settingsJSON(800), "de": settingsJSON(800)}
	mux.HandleFunc("/catalog", func(w http.ResponseWriter, r *http.Request) {
		lang, _, _ := strings.Cut(r.Header.Get("Accept-Language"), ",")
		lang, _, _ = strings.Cut(lang, "-")
		if _, ok := catalogues[lang]; !ok {
			lang = "en"
		}
		fmt.Fprintf(w, "page %s of the %s catalogue: %d entries\n", r.URL.Query().Get("page"), lang,
			DecodeSettings(catalogues[lang]))
	})
	mux.HandleFunc("/me", func(w http.ResponseWriter, r *http.Request) {
		var doc []byte
		c, err := r.Cookie("user")
		ok := err == nil
		if ok {
			doc, ok = saved[c.Value]
		}
		if !ok {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "page %s: %d settings of %s\n", r.URL.Query().Get("page"), DecodeSettings(doc), c.Value)
	})
	numbers := map[int][]int{}
	for n := 1; n <= 12; n++ {
		numbers[n] = UsersNumbers(n)
	}
	mux.HandleFunc("/sorted", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("user"))
		stored, ok := numbers[n]
		if !ok {
			http.NotFound(w, r)
			return
		}
		nums := SortedOf(stored)
		first := make([]string, 20)
		for i := range first {
			first[i] = strconv.Itoa(nums[i])
		}
		fmt.Fprintf(w, "user %d: %d numbers, median %d, largest %d; first: %s\n", n, len(nums), nums[len(nums)/2],
			nums[len(nums)-1], strings.Join(first, " "))
	})
	mux.HandleFunc("/stamped", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		fmt.Fprintf(zw, "<p>rendered %d</p>", time.Now().UnixNano())
		for i := range 400 {
			fmt.Fprintf(zw, "<li>page %s, line %d: %s</li>", r.URL.Query().Get("page"), i, settingsJSON(1))
		}
		zw.Close()
	})
	mux.HandleFunc("/gzpage", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		zw, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
		line := []byte(fmt.Sprintf("<li>page %s: %s</li>", r.URL.Query().Get("page"), settingsJSON(1)))
		for range 2000 {
			zw.Write(line)
		}
		zw.Close()
	})
}
