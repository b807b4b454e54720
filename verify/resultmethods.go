package verify

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/tools/go/packages"
)

// A result shared by every call must not be changed by one: re.Longest()
// on a regexp compiled once switches every later request's matching. Go
// marks no method as read-only; a method whose own body assigns through
// its receiver (re.longest = true) is read as one that writes it.

// maxMethodFile bounds the source file read for a method's body.
const maxMethodFile = 4 << 20

// resultMethodWrites is the first call in the function holding the call
// of a method on obj (the call's result) whose body assigns through its
// receiver, as "`re.Longest()` (line 12)"; empty if none is seen.
func (a *analysis) resultMethodWrites(obj types.Object) string {
	var fn ast.Node
	for _, n := range a.path {
		if _, ok := n.(*ast.FuncDecl); ok {
			fn = n
			break
		}
		if _, ok := n.(*ast.FuncLit); ok {
			fn = n
			break
		}
	}
	if fn == nil {
		return ""
	}
	info := a.pkg.TypesInfo
	found := ""
	ast.Inspect(fn, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || found != "" {
			return found == ""
		}
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := ast.Unparen(sel.X).(*ast.Ident)
		if !ok || info.Uses[id] != obj {
			return true
		}
		if s := info.Selections[sel]; s != nil && s.Kind() == types.MethodVal {
			if m, ok := s.Obj().(*types.Func); ok && a.methodWritesReceiver(m) {
				found = "`" + a.text(call) + "` (" + a.where(call.Pos()) + ")"
			}
		}
		return true
	})
	return found
}

// methodWritesReceiver reports whether m's body, read from its source
// file, assigns to or through its receiver (r.f = …, r.n++, *r = …).
func (a *analysis) methodWritesReceiver(m *types.Func) bool {
	sig, ok := m.Type().(*types.Signature)
	if !ok || sig.Recv() == nil {
		return false
	}
	if _, ptr := sig.Recv().Type().(*types.Pointer); !ptr {
		return false // a value receiver writes a copy
	}
	pos := a.pkg.Fset.Position(m.Pos())
	if rest, ok := strings.CutPrefix(pos.Filename, "$GOROOT"); ok { // export data names the standard library so
		pos.Filename = goroot(a.pkg) + rest
	}
	if pos.Filename == "" || !filepath.IsAbs(pos.Filename) {
		return false
	}
	if st, err := os.Stat(pos.Filename); err != nil || st.Size() > maxMethodFile {
		return false
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, pos.Filename, nil, parser.SkipObjectResolution)
	if err != nil {
		return false
	}
	writes := false
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv == nil || fd.Body == nil || fd.Name.Name != m.Name() || fset.Position(fd.Name.Pos()).Line != pos.Line {
			continue
		}
		if len(fd.Recv.List) == 0 || len(fd.Recv.List[0].Names) == 0 {
			return false
		}
		recv := fd.Recv.List[0].Names[0].Name
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			var lhs []ast.Expr
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok != token.DEFINE {
					lhs = n.Lhs
				}
			case *ast.IncDecStmt:
				lhs = []ast.Expr{n.X}
			}
			for _, e := range lhs {
				if _, bare := ast.Unparen(e).(*ast.Ident); bare {
					continue // the receiver variable itself: a local
				}
				if id := baseIdent(e); id != nil && id.Name == recv {
					writes = true
				}
			}
			return !writes
		})
	}
	return writes
}

// goroots keeps the GOROOT of the go command in each package's folder:
// the user's Go, whose standard library the package was checked against.
var goroots sync.Map

func goroot(pkg *packages.Package) string {
	dir := ""
	if len(pkg.GoFiles) > 0 {
		dir = filepath.Dir(pkg.GoFiles[0])
	}
	if r, ok := goroots.Load(dir); ok {
		return r.(string)
	}
	cmd := exec.Command("go", "env", "GOROOT")
	cmd.Dir = dir
	out, err := cmd.Output()
	r := ""
	if err == nil {
		r = strings.TrimSpace(string(out))
	}
	goroots.Store(dir, r)
	return r
}
