// A catalog the server holds from start and encodes per request, which an
// admin handler grows in place: a memo keyed by the catalog's address
// would serve the catalog as it was. Never memo-by-held-value.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	_ "net/http/pprof" // the profile --verify takes the hot site from
	"sync"
)

type item struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

type catalog struct {
	mu    sync.RWMutex
	Items []item `json:"items"`
}

type server struct{ cat *catalog }

func (s *server) list(w http.ResponseWriter, r *http.Request) {
	s.cat.mu.RLock()
	b, err := json.Marshal(s.cat) // hot: grown marshal
	s.cat.mu.RUnlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Write(b)
}

// add grows the catalog it is given, at the same address.
func add(c *catalog, name string) {
	c.mu.Lock()
	c.Items = append(c.Items, item{ID: len(c.Items), Name: name})
	c.mu.Unlock()
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	c := &catalog{}
	for i := range 300 {
		c.Items = append(c.Items, item{ID: i, Name: fmt.Sprint("item ", i)})
	}
	s := &server{cat: c}
	http.HandleFunc("/", s.list)
	http.HandleFunc("/admin/add", func(w http.ResponseWriter, r *http.Request) { add(c, r.URL.Query().Get("name")) })
	log.Fatal(http.ListenAndServe(*addr, nil))
}
