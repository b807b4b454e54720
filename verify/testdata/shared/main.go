// A server that infers a JSON schema from a Go type on every request and
// then adds the caller's own extension property to it: the inference is
// constant, but the value it returns is changed per request. Done once,
// every request writes the one schema's map while others read it: the
// variant --verify builds crashes under load, and probe must say so.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	_ "net/http/pprof" // the profile --verify takes the hot site from
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Order is the document /describe describes.
type Order struct {
	ID       string `json:"id" jsonschema:"the order's id"`
	Customer struct {
		Name  string `json:"name"`
		Email string `json:"email"`
		Phone string `json:"phone,omitempty"`
	} `json:"customer"`
	Lines []struct {
		SKU   string  `json:"sku"`
		Qty   int     `json:"qty"`
		Price float64 `json:"price,omitempty"`
	} `json:"lines"`
	Note     string            `json:"note,omitempty"`
	Tags     []string          `json:"tags,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Shipping struct {
		Street, City, Zip, Country string
		Express                    bool
	} `json:"shipping"`
	Billing struct {
		Street, City, Zip, Country string
		VATID                      string `json:"vat_id,omitempty"`
	} `json:"billing"`
}

func describe(w http.ResponseWriter, r *http.Request) {
	s, err := jsonschema.For[Order](nil) // hot: schema for
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	ext := r.URL.Query().Get("ext")
	if ext == "" {
		ext = "none"
	}
	extend(s, ext)
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	fmt.Fprintln(w, strings.Join(names, " "))
}

// extend adds the caller's extension property: a write into the schema's
// map that the call site does not show.
func extend(s *jsonschema.Schema, ext string) {
	s.Properties["x-"+ext] = &jsonschema.Schema{Type: "string"}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	http.HandleFunc("/describe", describe)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
