// A server that parses a constant template on every request: the load-time
// finding --verify hoists whole, receiver chain and all.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	_ "net/http/pprof" // the profile --verify takes the hot site from
	"strings"
	"text/template"
)

const (
	head = `<html><head><title>{{.Title}}</title></head><body><h1>{{.Title | printf "%q"}}</h1><ul>`
	row  = `{{range $i, $x := .Items}}{{if eq (len $x) 0}}<li>-</li>` +
		`{{else}}<li id="{{$i}}">{{$x | html}}</li>{{end}}{{end}}`
	foot = `</ul>{{with .Title}}<p>{{len .}} bytes</p>{{end}}</body></html>`
)

type page struct {
	Title string
	Items []string
}

func render(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	t := template.Must(template.New("page").Parse(head + strings.Repeat(row, 30) + foot))   // hot: page
	if err := t.Execute(w, page{Title: name, Items: strings.Split(name, "")}); err != nil { // hot: page execute
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// makeList's handler encodes the list it was made with on every call, to
// say how large it is: the list is the literal's, the same on each call,
// not the request's.
func makeList(items []string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := json.Marshal(items) // hot: captured
		fmt.Fprintf(w, "%d items, %d bytes of JSON\n", len(items), len(b))
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	http.HandleFunc("/page", render)
	http.HandleFunc("/list", makeList(strings.Fields(strings.Repeat("alpha beta gamma delta ", 500))))
	log.Fatal(http.ListenAndServe(*addr, nil))
}
