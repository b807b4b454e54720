// A server that compiles a constant JSON schema on every request, through a
// helper: the hot call is in compile, the constant one frame up.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	_ "net/http/pprof" // the profile --verify takes the hot site from
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// orderSchema is the contract of /validate's documents; it never changes.
var orderSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["id", "customer", "lines"],
  "properties": {
    "id": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{6}$"},
    "customer": {"$ref": "#/$defs/customer"},
    "lines": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/line"}},
    "note": {"type": "string", "maxLength": 200}
  },
  "$defs": {
    "customer": {"type": "object", "required": ["name", "email"], "properties": {
      "name": {"type": "string", "minLength": 1},
      "email": {"type": "string", "pattern": "^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$"},
      "phone": {"type": "string", "pattern": "^\\+?[0-9 ()-]{7,20}$"},
      "address": {"$ref": "#/$defs/address"}}},
    "address": {"type": "object", "properties": {
      "street": {"type": "string"}, "city": {"type": "string"},
      "zip": {"type": "string", "pattern": "^[0-9]{5}(-[0-9]{4})?$"},
      "country": {"enum": ["US", "CA", "MX", "FR", "DE", "GB", "JP"]}}},
    "line": {"type": "object", "required": ["sku", "qty"], "properties": {
      "sku": {"type": "string", "pattern": "^[A-Z0-9]{4,12}$"},
      "qty": {"type": "integer", "minimum": 1, "maximum": 999},
      "price": {"type": "number", "exclusiveMinimum": 0}}}
  }
}`

// compile is the schema's compilation: parse, then resolve references.
func compile(text string) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil) // hot: schema resolve
}

func validate(w http.ResponseWriter, r *http.Request) {
	rs, err := compile(orderSchema) // hot: schema compile
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var doc any
	if err := json.NewDecoder(strings.NewReader(r.URL.Query().Get("doc"))).Decode(&doc); err != nil {
		fmt.Fprintln(w, "not JSON")
		return
	}
	if err := rs.Validate(doc); err != nil {
		fmt.Fprintln(w, "invalid:", err)
		return
	}
	fmt.Fprintln(w, "valid")
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	http.HandleFunc("/validate", validate)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
