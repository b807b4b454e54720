package plan

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

var update = flag.Bool("update", false, "rewrite docs/probe.schema.json from the model")

const schemaFile = "../docs/probe.schema.json"

// The committed schema is the model's: a change to the model without
// `go test ./plan -run TestSchemaIsCurrent -update` fails here.
func TestSchemaIsCurrent(t *testing.T) {
	got, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatalf("%v (write it with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: go test ./plan -run TestSchemaIsCurrent -update", schemaFile)
	}
}

func resolvedSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	src, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(src, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// What the reader takes, the schema takes; what the schema refuses, the
// reader refuses too.
func TestSchemaAgreesWithTheReader(t *testing.T) {
	r := resolvedSchema(t)
	for _, tc := range []struct {
		src string
		ok  bool
	}{
		{designExample, true},
		{scenarioExample, true},
		{`{"$schema": "` + SchemaID + `", "microloads": [{"use": "sitemap"}]}`, true},
		{`{"microloads": [{"name": "n", "path": "/x", "params": {"a": 1, "b": [1, "x", true], "c": {"range": [1, 3]}, "d": ` +
			`{"sitemap": "/p/"}}}]}`, true},
		{`{"microloads": [{"name": "x", "path": "/", "checks": {"stauts": 200}}]}`, false},
		{`{"microloads": [{"use": "serach"}]}`, false},
		{`{"microloads": [{"name": "x", "path": "/", "params": {"n": {"range": [1]}}}]}`, false},
		{`{"microloads": [{"name": "x", "path": "/", "checks": {"status": 99}}]}`, false},
		{`{"scenarios": [{"name": "s", "steps": [{"path": "/a", "extract": {"x": {"json": "a", "header": "b"}}}]}]}`, false},
		{`{"scenarios": [{"name": "s", "steps": [{"path": "/a"}]}], "mix": {"s": 0}}`, false},
		{`{"scenarios": [{"name": "s"}]}`, false},
		{`{"targte": "http://x"}`, false},
		{`{"microloads": null}`, false},
		{`{"microloads": [{"use": "page"}], "scenarios": []}`, false},
		{`{"microloads": [{"name": "x", "path": "/", "checks": null}]}`, false},
	} {
		var doc any
		if err := json.Unmarshal([]byte(tc.src), &doc); err != nil {
			t.Fatal(err)
		}
		err := r.Validate(doc)
		if (err == nil) != tc.ok {
			t.Errorf("schema on %s: %v, want ok=%v", tc.src, err, tc.ok)
		}
		if _, perr := Parse("f.json", []byte(tc.src)); (perr == nil) != tc.ok {
			t.Errorf("reader on %s: %v, want ok=%v", tc.src, perr, tc.ok)
		}
	}
}

func TestSchemaNamesTheModel(t *testing.T) {
	src, _ := Schema()
	for _, want := range []string{`"queryParam"`, `"notContains"`, `"extract"`, `"toolslist"`, `"$schema"`, `"the server's URL`} {
		if !strings.Contains(string(src), want) {
			t.Errorf("the schema lacks %s", want)
		}
	}
}
