// Traps: expensive calls whose input is the request's own. None is
// load-time; each is cacheable by its input, which a memo helps only where
// inputs repeat.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	_ "net/http/pprof" // the profile --verify takes the hot site from
	"regexp"
	"strings"
	"text/template"
)

// grep compiles the pattern the client sends.
func grep(w http.ResponseWriter, r *http.Request) {
	re, err := regexp.Compile(r.URL.Query().Get("pat")) // hot: trap regexp
	if err != nil {
		http.Error(w, "bad pattern", http.StatusBadRequest)
		return
	}
	fmt.Fprintln(w, re.MatchString(r.URL.Query().Get("s")))
}

// greet parses the template the client sends.
func greet(w http.ResponseWriter, r *http.Request) {
	text := strings.Repeat(r.URL.Query().Get("tpl"), 20)
	t, err := template.New("greet").Parse(text) // hot: trap template
	if err != nil {
		http.Error(w, "bad template", http.StatusBadRequest)
		return
	}
	t.Execute(w, map[string]string{"name": r.URL.Query().Get("name")}) // hot: trap execute
}

// sum reads the body: a call with side effects, never rewritten.
func sum(w http.ResponseWriter, r *http.Request) {
	buf := make([]byte, 64)
	n, _ := r.Body.Read(buf) // hot: trap body
	fmt.Fprintln(w, n)
}

// makeFind's handler compiles the prefix it was made with and the pattern
// the client sends: the request's input beside the literal's.
func makeFind(prefix string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		re, err := regexp.Compile(prefix + r.URL.Query().Get("pat")) // hot: trap maker
		if err != nil {
			http.Error(w, "bad pattern", http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, re.MatchString(r.URL.Query().Get("s")))
	}
}

// makeCount's handler counts its calls in the list it was made with, then
// encodes the list: the literal's value, written on each call.
func makeCount(hits []int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hits[0]++
		b, _ := json.Marshal(hits) // hot: trap written
		w.Write(b)
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	http.HandleFunc("/grep", grep)
	http.HandleFunc("/greet", greet)
	http.HandleFunc("/sum", sum)
	http.HandleFunc("/find", makeFind("^"))
	http.HandleFunc("/count", makeCount(make([]int, 1)))
	log.Fatal(http.ListenAndServe(*addr, nil))
}
