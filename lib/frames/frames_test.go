package frames

import (
	"testing"

	"github.com/google/pprof/profile"
)

func TestKind(t *testing.T) {
	for _, tc := range []struct{ fn, file, kind string }{
		{"compress/flate.(*compressor).deflate", "/usr/local/go/src/compress/flate/deflate.go", Std},
		{"runtime.mallocgc", "/usr/local/go/src/runtime/malloc.go", Runtime},
		{"internal/runtime/maps.(*Map).getWithKey", "/usr/local/go/src/internal/runtime/maps/map.go", Runtime},
		{"github.com/blevesearch/bleve/v2.(*indexImpl).Search", "/root/go/pkg/mod/github.com/blevesearch/bleve/v2@v2.6.3/index_impl.go", ThirdParty},
		{"github.com/probehq/probe/fixtures/site.(*snapshot).walkFeeds", "/work/main/fixtures/site/snapshot.go", Own},
		{"main.handler", "/src/app/main.go", Own},
		{"golang.org/x/net/http2.(*serverConn).serve", "", ThirdParty},
		{"encoding/json.Marshal", "", Std},
		// -trimpath: no GOROOT in the file names.
		{"reflect.Value.Call", "reflect/value.go", Std},
		{"text/template.(*state).evalCall", "text/template/exec.go", Std},
		{"app/handlers.(*Feed).build", "app/handlers/feed.go", Own},
		{"main.main.func1", "main.go", Own},
		{"runtime/pprof.(*profileBuilder).build", "runtime/pprof/proto.go", Runtime},
		{"runtimeutil.F", "/src/runtimeutil/f.go", Own},
		// a toolchain fetched by GOTOOLCHAIN lives in the module cache
		{"strings.Fields", "/root/go/pkg/mod/golang.org/toolchain@v0.0.1-go1.27.3.linux-amd64/src/strings/strings.go", Std},
		{"runtime.mapassign_faststr", "/root/go/pkg/mod/golang.org/toolchain@v0.0.1-go1.27.3.linux-amd64/src/internal/runtime/maps/runtime_faststr.go", Runtime},
	} {
		if got := Kind(tc.fn, tc.file); got != tc.kind {
			t.Errorf("Kind(%q, %q) = %s, want %s", tc.fn, tc.file, got, tc.kind)
		}
	}
}

func TestPkgPath(t *testing.T) {
	for fn, want := range map[string]string{
		"github.com/probehq/probe/fixtures/site.(*snapshot).walkFeeds": "github.com/probehq/probe/fixtures/site",
		"compress/flate.NewWriter":                                     "compress/flate",
		"main.main.func1":                                              "main",
		"github.com/a/b.c.D":                                           "github.com/a/b",
	} {
		if got := PkgPath(fn); got != want {
			t.Errorf("PkgPath(%q) = %q, want %q", fn, got, want)
		}
	}
}

func TestDisplayName(t *testing.T) {
	for in, want := range map[string]string{
		"encoding/json.Marshal": "encoding/json.Marshal",
		"github.com/google/jsonschema-go/jsonschema.unmarshalStructWithMap[go.shape.98589ff4]": "github.com/google/jsonschema-go/jsonschema.unmarshalStructWithMap[…]",
		"x.marshal[go.shape.struct { Items interface {} \"json:\\\"items\\\"\"; *x.T }]":       "x.marshal[…]",
		"internal/sync.(*HashTrieMap[go.shape.interface {},go.shape.interface {}]).Load":       "internal/sync.(*HashTrieMap[…]).Load",
	} {
		if got := DisplayName(in); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
}

// A server built out of the module cache (go install example.com/x@v1):
// its files look like a dependency's; main.main tells which module is its.
func TestMainModule(t *testing.T) {
	p := &profile.Profile{Function: []*profile.Function{
		{Name: "net/http.(*Server).Serve", Filename: "/usr/local/go/src/net/http/server.go"},
		{Name: "main.main", Filename: "/root/go/pkg/mod/github.com/caddyserver/caddy/v2@v2.11.9/cmd/caddy/main.go"},
	}}
	mod := MainModule(nil, p)
	if mod != "github.com/caddyserver/caddy/v2" {
		t.Fatalf("main module %q", mod)
	}
	c := Code{MainModule: mod}
	for _, tc := range []struct{ fn, file, kind string }{
		{"github.com/caddyserver/caddy/v2/modules/caddyhttp/templates.(*Templates).ServeHTTP", "/root/go/pkg/mod/github.com/caddyserver/caddy/v2@v2.11.9/modules/caddyhttp/templates/templates.go", Own},
		{"github.com/klauspost/compress/gzip.(*Writer).Write", "/root/go/pkg/mod/github.com/klauspost/compress@v1.18.0/gzip/gzip.go", ThirdParty},
		{"text/template.(*Template).Parse", "/usr/local/go/src/text/template/template.go", Std},
	} {
		if got := c.Kind(tc.fn, tc.file); got != tc.kind {
			t.Errorf("%s: %s, want %s", tc.fn, got, tc.kind)
		}
	}
	// Escaped module paths (upper case) are read back.
	esc := &profile.Profile{Function: []*profile.Function{{Name: "main.main", Filename: "/root/go/pkg/mod/github.com/!cloudy!kit/app@v1.0.0/main.go"}}}
	if m := MainModule(esc); m != "github.com/CloudyKit/app" {
		t.Errorf("escaped: %q", m)
	}
	// Built from a checkout: nothing to tell, and nothing needed.
	src := &profile.Profile{Function: []*profile.Function{{Name: "main.main", Filename: "/src/server/main.go"}}}
	if m := MainModule(src); m != "" {
		t.Errorf("a checkout: %q", m)
	}
	if k := Kind("github.com/acme/server/internal/feed.Build", "/src/server/internal/feed/build.go"); k != Own {
		t.Errorf("a dotted module built from its checkout: %s", k)
	}
	if k := Kind("github.com/acme/lib.F", "github.com/acme/lib@v1.2.0/f.go"); k != ThirdParty {
		t.Errorf("a -trimpath dependency: %s", k)
	}
	if k := Kind("github.com/acme/server/feed.Build", "github.com/acme/server/feed/build.go"); k != Own {
		t.Errorf("a -trimpath main module: %s", k)
	}
}
