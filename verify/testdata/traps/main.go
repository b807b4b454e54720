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

// filter is a rule an admin changes while the server runs: conf.Set
// writes it through a pointer Go takes without an &.
type filter struct{ Pattern string }

func (f *filter) Set(p string) { f.Pattern = p }

var conf = filter{Pattern: `^[a-z]+$`}

// words are the blocked words, which an admin replaces in place.
var words = []string{"spam", "scam"}

// screen compiles a rule no request names, but an admin changes.
func screen(w http.ResponseWriter, r *http.Request) {
	re := regexp.MustCompile(conf.Pattern) // hot: trap set
	fmt.Fprintln(w, re.MatchString(r.URL.Query().Get("s")))
}

// block compiles the blocked words, which an admin replaces in place.
func block(w http.ResponseWriter, r *http.Request) {
	re := regexp.MustCompile(strings.Join(words, "|")) // hot: trap copy
	fmt.Fprintln(w, re.MatchString(r.URL.Query().Get("s")))
}

// longest compiles a constant pattern, then switches it to leftmost-longest
// matching when the request asks: compiled once, one request would switch
// every later one.
func longest(w http.ResponseWriter, r *http.Request) {
	re := regexp.MustCompile(`a+|a+b`) // hot: trap longest
	if r.URL.Query().Has("longest") {
		re.Longest()
	}
	fmt.Fprintln(w, re.FindString(r.URL.Query().Get("s")))
}

// blocked are patterns an admin edits in place; the handler makeMatch
// makes holds them.
var blocked = []string{"spam", "scam"}

// makeMatch's handler compiles the patterns it was made with: the
// package's slice, which admin writes into while the server runs.
func makeMatch(pats []string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		re := regexp.MustCompile(pats[0] + "|" + pats[1]) // hot: trap given
		fmt.Fprintln(w, re.MatchString(r.URL.Query().Get("s")))
	}
}

// admin changes the rule, the words and the blocked patterns; no
// microload calls it.
func admin(w http.ResponseWriter, r *http.Request) {
	conf.Set(r.URL.Query().Get("pattern"))
	copy(words, strings.Fields(r.URL.Query().Get("words")))
	blocked[0] = r.URL.Query().Get("first")
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	http.HandleFunc("/grep", grep)
	http.HandleFunc("/greet", greet)
	http.HandleFunc("/sum", sum)
	http.HandleFunc("/find", makeFind("^"))
	http.HandleFunc("/count", makeCount(make([]int, 1)))
	http.HandleFunc("/screen", screen)
	http.HandleFunc("/block", block)
	http.HandleFunc("/admin", admin)
	http.HandleFunc("/match", makeMatch(blocked))
	http.HandleFunc("/longest", longest)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
