package verify

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/packages"
)

// analysis answers, for the expressions of one function, whether each is
// the same on every call (load-time) and why not.
type analysis struct {
	pkg     *packages.Package
	written map[types.Object]token.Pos   // variables assigned after load time: where first
	writes  map[types.Object][]token.Pos // and everywhere
	path    []ast.Node                   // the call's enclosing nodes, innermost first
}

// effectPackages are the standard packages whose functions are called for
// what they do or for a value that changes (time.Now, rand.Int): a call to one
// is never the same on every request. The standard library only: probe
// cannot read other libraries' intent, and the variant's replies are compared
// with the original's anyway.
var effectPackages = map[string]bool{
	"os": true, "io": true, "net": true, "net/http": true, "time": true, "math/rand": true, "math/rand/v2": true,
	"crypto/rand": true, "sync": true, "sync/atomic": true, "log": true, "log/slog": true, "syscall": true,
	"runtime": true, "context": true,
}

func newAnalysis(pkg *packages.Package, path []ast.Node) *analysis {
	a := &analysis{pkg: pkg, written: map[types.Object]token.Pos{}, writes: map[types.Object][]token.Pos{}, path: path}
	for _, f := range pkg.Syntax {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "init" {
				continue // runs before any request: its writes are load time
			}
			ast.Inspect(d, a.noteWrites)
		}
	}
	return a
}

// noteWrites records the variables n assigns, increments, or takes the
// address of (a pointer may write it later).
func (a *analysis) noteWrites(n ast.Node) bool {
	var targets []ast.Expr
	switch n := n.(type) {
	case *ast.AssignStmt:
		targets = n.Lhs
	case *ast.IncDecStmt:
		targets = []ast.Expr{n.X}
	case *ast.UnaryExpr:
		if n.Op == token.AND {
			targets = []ast.Expr{n.X}
		}
	case *ast.RangeStmt:
		if n.Tok == token.ASSIGN {
			targets = []ast.Expr{n.Key, n.Value}
		}
	}
	for _, t := range targets {
		if id := baseIdent(t); id != nil {
			if obj := a.pkg.TypesInfo.Uses[id]; obj != nil {
				if _, seen := a.written[obj]; !seen {
					a.written[obj] = id.Pos()
				}
				a.writes[obj] = append(a.writes[obj], id.Pos())
			}
		}
	}
	return true
}

// baseIdent is the variable an assignment's target writes into: x in
// x, x[i], x.f, *x, x[a:b].
func baseIdent(e ast.Expr) *ast.Ident {
	for {
		switch t := e.(type) {
		case *ast.Ident:
			return t
		case *ast.ParenExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.SelectorExpr:
			e = t.X
		case *ast.StarExpr:
			e = t.X
		case *ast.SliceExpr:
			e = t.X
		default:
			return nil
		}
	}
}

// notLoadTime says why an expression is not the same on every call.
type notLoadTime struct{ why string }

// loadTime reports whether e is the same on every call. With ranges, a
// variable ranging over a load-time collection counts too (its values are
// fixed, the call is then memoised by value), and ranged says one was used.
func (a *analysis) loadTime(e ast.Expr, ranges bool) (ranged bool, no *notLoadTime) {
	info := a.pkg.TypesInfo
	if tv, ok := info.Types[e]; ok && (tv.Value != nil || tv.IsType() || tv.IsNil()) {
		return false, nil
	}
	check := func(es ...ast.Expr) (bool, *notLoadTime) {
		any := false
		for _, x := range es {
			if x == nil {
				continue
			}
			r, no := a.loadTime(x, ranges)
			if no != nil {
				return false, no
			}
			any = any || r
		}
		return any, nil
	}
	switch e := e.(type) {
	case *ast.BasicLit:
		return false, nil
	case *ast.Ident:
		return a.identLoadTime(e, ranges)
	case *ast.ParenExpr:
		return check(e.X)
	case *ast.BinaryExpr:
		return check(e.X, e.Y)
	case *ast.UnaryExpr:
		if e.Op == token.AND {
			if _, lit := e.X.(*ast.CompositeLit); !lit {
				return false, &notLoadTime{why: "`" + a.text(e) + "` points at a variable"}
			}
		}
		if e.Op == token.ARROW {
			return false, &notLoadTime{why: "`" + a.text(e) + "` receives from a channel"}
		}
		return check(e.X)
	case *ast.StarExpr:
		return check(e.X)
	case *ast.SelectorExpr:
		if id, ok := e.X.(*ast.Ident); ok {
			if _, pkg := info.Uses[id].(*types.PkgName); pkg {
				return a.qualifiedLoadTime(e)
			}
		}
		return check(e.X)
	case *ast.IndexExpr:
		return check(e.X, e.Index)
	case *ast.IndexListExpr:
		return check(append([]ast.Expr{e.X}, e.Indices...)...)
	case *ast.SliceExpr:
		return check(e.X, e.Low, e.High, e.Max)
	case *ast.CompositeLit:
		return check(e.Elts...)
	case *ast.KeyValueExpr:
		return check(e.Value)
	case *ast.CallExpr:
		return a.callLoadTime(e, ranges)
	}
	return false, &notLoadTime{why: "`" + a.text(e) + "` is not a constant expression probe can follow"}
}

func (a *analysis) qualifiedLoadTime(e *ast.SelectorExpr) (bool, *notLoadTime) {
	obj := a.pkg.TypesInfo.Uses[e.Sel]
	if obj == nil {
		return false, &notLoadTime{why: "`" + a.text(e) + "` is not resolved"}
	}
	if effectPackages[obj.Pkg().Path()] {
		return false, &notLoadTime{why: "`" + a.text(e) + "` is from " + obj.Pkg().Path() +
			", called for its effects or a value that changes"}
	}
	if _, ok := a.written[obj]; ok {
		return false, &notLoadTime{why: "`" + a.text(e) + "` is assigned by this package at " + a.where(a.written[obj])}
	}
	return false, nil // another package's function, constant or variable this package does not write
}

func (a *analysis) callLoadTime(e *ast.CallExpr, ranges bool) (bool, *notLoadTime) {
	info := a.pkg.TypesInfo
	if tv, ok := info.Types[e.Fun]; ok && tv.IsType() { // a conversion
		return a.loadTimeAll(e.Args, ranges)
	}
	if id, ok := ast.Unparen(e.Fun).(*ast.Ident); ok {
		if b, ok := info.Uses[id].(*types.Builtin); ok {
			switch b.Name() {
			case "len", "cap", "min", "max", "complex", "real", "imag", "make", "new":
				return a.loadTimeAll(e.Args, ranges)
			}
			return false, &notLoadTime{why: "`" + a.text(e) + "` calls " + b.Name() + ", which changes or reads state"}
		}
	}
	if fn := typeFunc(info, e); fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "fmt" &&
		!strings.HasPrefix(fn.Name(), "Sprint") && fn.Name() != "Errorf" && fn.Name() != "Append" {
		return false, &notLoadTime{why: "`" + a.text(e) + "` reads or writes a stream"}
	}
	r1, no := a.loadTime(e.Fun, ranges)
	if no != nil {
		return false, no
	}
	r2, no := a.loadTimeAll(e.Args, ranges)
	return r1 || r2, no
}

func (a *analysis) loadTimeAll(es []ast.Expr, ranges bool) (bool, *notLoadTime) {
	any := false
	for _, x := range es {
		r, no := a.loadTime(x, ranges)
		if no != nil {
			return false, no
		}
		any = any || r
	}
	return any, nil
}

func (a *analysis) identLoadTime(id *ast.Ident, ranges bool) (bool, *notLoadTime) {
	obj := a.pkg.TypesInfo.Uses[id]
	switch obj := obj.(type) {
	case *types.Const, *types.TypeName, *types.Builtin, *types.Nil:
		return false, nil
	case *types.Func:
		return false, nil
	case *types.Var:
		if pos, ok := a.written[obj]; ok {
			return false, &notLoadTime{why: "`" + id.Name + "` is assigned at " + a.where(pos) + ", after load time"}
		}
		if obj.Parent() == a.pkg.Types.Scope() {
			return false, nil // package-level, written only by its declaration and init
		}
		if fn := a.paramOf(obj); fn != "" {
			return false, &notLoadTime{why: "`" + id.Name + "` is a parameter of " + fn + ": it comes with each call"}
		}
		if ranges {
			if rs := a.rangeOver(obj); rs != nil {
				if _, no := a.loadTime(rs.X, false); no == nil {
					return true, nil
				}
			}
		}
		return false, &notLoadTime{why: "`" + id.Name + "` is computed on each call (" + a.where(obj.Pos()) + ")"}
	}
	return false, &notLoadTime{why: "`" + id.Name + "` is not resolved"}
}

// paramOf is the name of the enclosing function whose parameter (or
// receiver) v is; empty if none.
func (a *analysis) paramOf(v *types.Var) string {
	for _, n := range a.path {
		var ft *ast.FuncType
		var recv *ast.FieldList
		name := "a function literal"
		switch f := n.(type) {
		case *ast.FuncDecl:
			ft, recv, name = f.Type, f.Recv, f.Name.Name
		case *ast.FuncLit:
			ft = f.Type
		default:
			continue
		}
		for _, fl := range []*ast.FieldList{recv, ft.Params} {
			if fl != nil && fl.Pos() <= v.Pos() && v.Pos() < fl.End() {
				return name
			}
		}
	}
	return ""
}

// rangeOver is the range statement around the call that declares v as its
// key or value.
func (a *analysis) rangeOver(v *types.Var) *ast.RangeStmt {
	for _, n := range a.path {
		rs, ok := n.(*ast.RangeStmt)
		if !ok || rs.Tok != token.DEFINE {
			continue
		}
		for _, x := range []ast.Expr{rs.Key, rs.Value} {
			if id, ok := x.(*ast.Ident); ok && a.pkg.TypesInfo.Defs[id] == v {
				return rs
			}
		}
	}
	return nil
}

func (a *analysis) where(pos token.Pos) string {
	p := a.pkg.Fset.Position(pos)
	return fmt.Sprintf("line %d", p.Line)
}

// text is e as the source writes it.
func (a *analysis) text(e ast.Node) string {
	var b strings.Builder
	if err := formatNode(&b, a.pkg.Fset, e); err != nil {
		return "?"
	}
	s := b.String()
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// typeFunc is the function or method a call calls, nil for a func value.
func typeFunc(info *types.Info, call *ast.CallExpr) *types.Func {
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		fn, _ := info.Uses[f].(*types.Func)
		return fn
	case *ast.SelectorExpr:
		fn, _ := info.Uses[f.Sel].(*types.Func)
		return fn
	case *ast.IndexExpr: // an instantiated generic function
		return typeFunc(info, &ast.CallExpr{Fun: f.X})
	case *ast.IndexListExpr:
		return typeFunc(info, &ast.CallExpr{Fun: f.X})
	}
	return nil
}
