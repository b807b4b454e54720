// A server that generates its documents' JSON schema on every request from
// the catalog it loaded at start: load-time work with no constant to hoist,
// which --verify memoises by the catalog it is made from. /trap generates a
// schema the same way from the request's own fields: never load-time.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	_ "net/http/pprof" // the profile --verify takes the hot site from
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

type field struct{ name, typ, pattern string }

// catalog is what the server loads at start: the fields of its documents.
type catalog struct {
	title  string
	fields []field
}

type server struct{ cat *catalog }

// schemaOf generates the JSON schema of a catalog's documents.
func schemaOf(c *catalog) (*jsonschema.Resolved, error) {
	s := &jsonschema.Schema{Type: "object", Title: c.title, Properties: map[string]*jsonschema.Schema{}}
	for _, f := range c.fields {
		s.Properties[f.name] = &jsonschema.Schema{Type: f.typ, Pattern: f.pattern}
		s.Required = append(s.Required, f.name)
	}
	return s.Resolve(nil) // hot: held resolve
}

func (sv *server) validate(w http.ResponseWriter, r *http.Request) {
	cat := sv.cat
	rs, err := schemaOf(cat) // hot: held schema
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	check(w, rs, r.URL.Query().Get("doc"))
}

// trap's fields are the client's: name:pattern,…
func (sv *server) trap(w http.ResponseWriter, r *http.Request) {
	rs, err := schemaOf(parse(r.URL.Query().Get("fields"))) // hot: held trap
	if err != nil {
		http.Error(w, "bad fields", http.StatusBadRequest)
		return
	}
	check(w, rs, r.URL.Query().Get("doc"))
}

// parse reads a catalog's fields as name:pattern,…
func parse(s string) *catalog {
	c := &catalog{title: "client's"}
	for _, kv := range strings.Split(s, ",") {
		name, pat, _ := strings.Cut(kv, ":")
		c.fields = append(c.fields, field{name: name, typ: "string", pattern: pat})
	}
	return c
}

// download is the catalog's field list as a client downloads it, compressed
// on every request: the bytes are made from the catalog, so the memo is
// keyed by it and makes them again on a miss.
func (sv *server) download(w http.ResponseWriter, r *http.Request) {
	var text []byte
	text = describe(sv.cat)
	w.Header().Set("Content-Encoding", "gzip")
	w.Write(gzipped(text)) // hot: held gzip
}

func describe(c *catalog) []byte {
	var b bytes.Buffer
	for _, f := range c.fields {
		fmt.Fprintf(&b, "%s %s %s\n", f.name, f.typ, f.pattern)
	}
	return b.Bytes()
}

func gzipped(b []byte) []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(b) // hot: held gzip write
	zw.Close()
	return out.Bytes()
}

func check(w http.ResponseWriter, rs *jsonschema.Resolved, doc string) {
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		fmt.Fprintln(w, "not JSON")
		return
	}
	if err := rs.Validate(v); err != nil {
		fmt.Fprintln(w, "invalid")
		return
	}
	fmt.Fprintln(w, "valid")
}

// load builds the catalog, as a server reads its configuration at start.
func load(n int) *catalog {
	c := &catalog{title: "orders"}
	for i := range n {
		c.fields = append(c.fields, field{name: fmt.Sprintf("f%02d", i), typ: "string",
			pattern: fmt.Sprintf("^[a-z]{%d,%d}(-[0-9]{2,4})?$", 1+i%3, 8+i%5)})
	}
	return c
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	sv := &server{cat: load(40)}
	http.HandleFunc("/validate", sv.validate)
	http.HandleFunc("/trap", sv.trap)
	http.HandleFunc("/download", sv.download)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
