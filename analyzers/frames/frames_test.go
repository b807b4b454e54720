package frames

import "testing"

func TestKind(t *testing.T) {
	for _, tc := range []struct{ fn, file, kind string }{
		{"compress/flate.(*compressor).deflate", "/usr/local/go/src/compress/flate/deflate.go", Std},
		{"runtime.mallocgc", "/usr/local/go/src/runtime/malloc.go", Runtime},
		{"internal/runtime/maps.(*Map).getWithKey", "/usr/local/go/src/internal/runtime/maps/map.go", Runtime},
		{"github.com/blevesearch/bleve/v2.(*indexImpl).Search", "/root/go/pkg/mod/github.com/blevesearch/bleve/v2@v2.6.3/index_impl.go", ThirdParty},
		{"probe/fixtures/site.(*snapshot).walkFeeds", "/work/main/fixtures/site/snapshot.go", Own},
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
		"probe/fixtures/site.(*snapshot).walkFeeds": "probe/fixtures/site",
		"compress/flate.NewWriter":                  "compress/flate",
		"main.main.func1":                           "main",
		"github.com/a/b.c.D":                        "github.com/a/b",
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
