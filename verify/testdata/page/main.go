// A server that parses a constant template on every request: the load-time
// finding --verify hoists whole, receiver chain and all.
package main

import (
	"flag"
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

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	http.HandleFunc("/page", render)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
