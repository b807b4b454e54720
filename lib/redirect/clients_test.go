package redirect

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The policy for every client at once: each http.Client that probe's code
// makes (outside tests and testdata) takes its CheckRedirect from this
// package; none uses net/http's default client (http.DefaultClient,
// http.Get, …), which follows redirects with the request's headers; each
// WebSocket dial and each MCP client transport is given such a client.
// The load engine (lib/h1, lib/h2) has no http.Client and follows nothing.

const self = "github.com/probehq/probe/lib/redirect"

// clientCheck is what one file breaks of the policy, and the clients it
// found that keep it.
type clientCheck struct {
	problems []string
	kept     []string
}

func checkClients(fset *token.FileSet, f *ast.File) clientCheck {
	var c clientCheck
	names := map[string]string{} // import path → the name the file gives it
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[path] = name
	}
	httpName, redirectName := names["net/http"], names[self]
	isSel := func(e ast.Expr, pkg, sel string) bool {
		s, ok := e.(*ast.SelectorExpr)
		if !ok || pkg == "" {
			return false
		}
		id, ok := s.X.(*ast.Ident)
		return ok && id.Name == pkg && s.Sel.Name == sel
	}
	field := func(lit *ast.CompositeLit, key string) ast.Expr {
		for _, el := range lit.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				if id, ok := kv.Key.(*ast.Ident); ok && id.Name == key {
					return kv.Value
				}
			}
		}
		return nil
	}
	usesRedirect := func(e ast.Expr) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := s.X.(*ast.Ident); ok && redirectName != "" && id.Name == redirectName {
					found = true
				}
			}
			return !found
		})
		return found
	}
	at := func(n ast.Node) string { return fset.Position(n.Pos()).String() }
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			switch {
			case isSel(n.Type, httpName, "Client"):
				if v := field(n, "CheckRedirect"); v == nil || !usesRedirect(v) {
					c.problems = append(c.problems, at(n)+": an http.Client without lib/redirect's CheckRedirect")
				} else {
					c.kept = append(c.kept, at(n))
				}
			case isSel(n.Type, names["github.com/coder/websocket"], "DialOptions"):
				if field(n, "HTTPClient") == nil {
					c.problems = append(c.problems, at(n)+": a WebSocket dial on the default client")
				}
			case isSel(n.Type, names["github.com/modelcontextprotocol/go-sdk/mcp"], "StreamableClientTransport"),
				isSel(n.Type, names["github.com/modelcontextprotocol/go-sdk/mcp"], "SSEClientTransport"):
				if field(n, "HTTPClient") == nil {
					c.problems = append(c.problems, at(n)+": an MCP transport on the default client")
				}
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "new" && len(n.Args) == 1 && isSel(n.Args[0], httpName, "Client") {
				c.problems = append(c.problems, at(n)+": new(http.Client) follows redirects")
			}
		case *ast.SelectorExpr:
			for _, sel := range []string{"DefaultClient", "Get", "Post", "Head", "PostForm"} {
				if isSel(n, httpName, sel) {
					c.problems = append(c.problems, at(n)+": http."+sel+" follows redirects with the headers")
				}
			}
		}
		return true
	})
	return c
}

func TestEveryClientTakesThePolicy(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module's root: %v", err)
	}
	fset := token.NewFileSet()
	var problems []string
	keptIn := map[string]int{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		c := checkClients(fset, f)
		problems = append(problems, c.problems...)
		rel, _ := filepath.Rel(root, path)
		keptIn[filepath.ToSlash(rel)] += len(c.kept)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
	// The clients of issue 34 were read (the test cannot pass on nothing).
	for _, file := range []string{"probes/agents/agents.go", "probes/ws/ws.go", "probes/ws/publish.go",
		"probes/ws/sample.go", "probes/production/production.go", "target/capture.go", "target/reply.go",
		"probes/fuzz/search.go", "probes/fuzz/supervisor.go", "pipeline/experiment.go"} {
		if keptIn[file] == 0 {
			t.Errorf("%s: no http.Client with lib/redirect's CheckRedirect found", file)
		}
	}
}

// The check itself finds each way a client follows a redirect.
func TestClientCheckFindsEachBreach(t *testing.T) {
	src := `package x
import (
	"net/http"
	ws "github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/probehq/probe/lib/redirect"
)
var a = &http.Client{}
var b = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}
var c = new(http.Client)
var d = http.DefaultClient
var e, _ = http.Get("http://x")
var f = ws.DialOptions{}
var g = mcp.StreamableClientTransport{}
var ok = &http.Client{CheckRedirect: redirect.Refuse("x")}
var ok2 = ws.DialOptions{HTTPClient: ok}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := checkClients(fset, f)
	if len(c.problems) != 7 || len(c.kept) != 1 {
		t.Fatalf("%d problems (want 7), %d kept (want 1):\n%s", len(c.problems), len(c.kept), strings.Join(c.problems, "\n"))
	}
	for i, want := range []string{"x.go:8:", "x.go:9:", "x.go:10:", "x.go:11:", "x.go:12:", "x.go:13:", "x.go:14:"} {
		if !strings.HasPrefix(c.problems[i], want) {
			t.Errorf("problem %d: %s, want it at %s", i, c.problems[i], want)
		}
	}
}
