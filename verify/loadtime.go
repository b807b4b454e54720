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
	into    map[types.Object][]token.Pos // where into what it holds (x[i] =, x.f =, &x), not x =
	path    []ast.Node                   // the call's enclosing nodes, innermost first
	defs    map[types.Object]defSite     // the enclosing function's locals (localDefs)
	// elsewhere: where the module's other packages write a variable
	// (writtenElsewhere), by its qualified name.
	elsewhere map[string]string
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

// newAnalysis is the analysis of the call path[0] (its enclosing nodes
// after it, innermost first).
func newAnalysis(pkg *packages.Package, path []ast.Node) *analysis {
	a := &analysis{pkg: pkg, written: map[types.Object]token.Pos{}, writes: map[types.Object][]token.Pos{},
		into: map[types.Object][]token.Pos{}, path: path[1:]}
	for _, f := range pkg.Syntax {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if ok && fd.Recv == nil && fd.Name.Name == "init" {
				continue // runs before any request: its writes are load time
			}
			ast.Inspect(d, a.noteWrites)
			if ok && fd.Body != nil {
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					if n == path[0] {
						return false // the call itself is what is examined
					}
					if call, ok := n.(*ast.CallExpr); ok {
						a.noteCallWrites(call)
					}
					return true
				})
			}
		}
	}
	return a
}

// noteCallWrites records the package's variables a call may write into
// after load time without naming them as a target: a method with a
// pointer receiver called on one (Go takes its address), a slice, map or
// pointer of one handed to a function (copy, clear, delete, sort.Strings,
// anything: probe cannot see what a function does with it), or to a
// method as its argument.
func (a *analysis) noteCallWrites(call *ast.CallExpr) {
	info := a.pkg.TypesInfo
	note := func(e ast.Expr) {
		id := baseIdent(e)
		if id == nil {
			return
		}
		v, ok := info.Uses[id].(*types.Var)
		if !ok || v.Parent() != a.pkg.Types.Scope() {
			return
		}
		if _, seen := a.written[v]; !seen {
			a.written[v] = id.Pos()
		}
		a.writes[v] = append(a.writes[v], id.Pos())
		a.into[v] = append(a.into[v], id.Pos())
	}
	fun := ast.Unparen(call.Fun)
	if sel, ok := fun.(*ast.SelectorExpr); ok {
		if s := info.Selections[sel]; s != nil && s.Kind() == types.MethodVal {
			_, ptrRecv := s.Obj().Type().(*types.Signature).Recv().Type().(*types.Pointer)
			_, ptrX := info.TypeOf(sel.X).Underlying().(*types.Pointer)
			if ptrRecv && !ptrX && !types.IsInterface(info.TypeOf(sel.X)) {
				note(sel.X)
			}
		}
	}
	if id, ok := fun.(*ast.Ident); ok {
		if b, ok := info.Uses[id].(*types.Builtin); ok {
			switch b.Name() {
			case "copy", "clear", "delete":
				if len(call.Args) > 0 {
					note(call.Args[0])
				}
			}
			return // len, cap, append, … read what they are given
		}
	}
	if tv, ok := info.Types[fun]; ok && tv.IsType() {
		return // a conversion
	}
	for _, arg := range call.Args {
		switch info.TypeOf(arg).Underlying().(type) {
		case *types.Slice, *types.Map, *types.Pointer:
			note(arg)
		}
	}
}

// noteWrites records the variables n assigns, increments, or takes the
// address of (a pointer may write it later).
func (a *analysis) noteWrites(n ast.Node) bool {
	targets, whole := writeTargets(n)
	for _, t := range targets {
		if id := baseIdent(t); id != nil {
			if obj := a.pkg.TypesInfo.Uses[id]; obj != nil {
				if _, seen := a.written[obj]; !seen {
					a.written[obj] = id.Pos()
				}
				a.writes[obj] = append(a.writes[obj], id.Pos())
				if _, bare := ast.Unparen(t).(*ast.Ident); !bare || !whole {
					a.into[obj] = append(a.into[obj], id.Pos())
				}
			}
		}
	}
	return true
}

// baseIdent is the variable an assignment's target writes into: x in
// x, x[i], x.f, *x, x[a:b].
func baseIdent(e ast.Expr) *ast.Ident {
	steps := chain(e)
	id, _ := steps[len(steps)-1].(*ast.Ident)
	return id
}

// chain is e and the expressions it writes through, outermost first:
// x.f[i] is x.f[i], x.f, x.
func chain(e ast.Expr) []ast.Expr {
	out := []ast.Expr{e}
	for {
		switch t := e.(type) {
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
			return out
		}
		out = append(out, e)
	}
}

// writeTargets is what n assigns, increments or takes the address of (a
// pointer may write it later), and whether it is the whole variable
// (x =, x++) rather than what it holds.
func writeTargets(n ast.Node) (targets []ast.Expr, whole bool) {
	switch n := n.(type) {
	case *ast.AssignStmt:
		return n.Lhs, true
	case *ast.IncDecStmt:
		return []ast.Expr{n.X}, true
	case *ast.UnaryExpr:
		if n.Op == token.AND {
			return []ast.Expr{n.X}, false
		}
	case *ast.RangeStmt:
		if n.Tok == token.ASSIGN {
			return []ast.Expr{n.Key, n.Value}, true
		}
	}
	return nil, false
}

// notLoadTime says why an expression is not the same on every call.
type notLoadTime struct {
	why string
	// captured: a parameter of a function outside the literal that holds
	// the call, fixed for that literal's life: no input of each call.
	captured bool
}

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
	case *ast.SelectorExpr:
		if a.qualified(e) {
			return a.qualifiedLoadTime(e)
		}
	case *ast.CallExpr:
		return a.callLoadTime(e, ranges)
	}
	kids, no, ok := a.operands(e)
	if no != nil {
		return false, no
	}
	if !ok {
		return false, &notLoadTime{why: "`" + a.text(e) + "` is not a constant expression probe can follow"}
	}
	return check(kids...)
}

// qualified reports whether e names another package's member (pkg.Name).
func (a *analysis) qualified(e *ast.SelectorExpr) bool {
	id, ok := e.X.(*ast.Ident)
	if !ok {
		return false
	}
	_, pkg := a.pkg.TypesInfo.Uses[id].(*types.PkgName)
	return pkg
}

// operands are the expressions e's value is made of, for the shapes both
// walkers (loadTime, stable) see through alike; ok is false for any other
// shape, and no says why a shape is never the same on every call.
func (a *analysis) operands(e ast.Expr) (kids []ast.Expr, no *notLoadTime, ok bool) {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return []ast.Expr{e.X}, nil, true
	case *ast.BinaryExpr:
		return []ast.Expr{e.X, e.Y}, nil, true
	case *ast.UnaryExpr:
		if _, lit := e.X.(*ast.CompositeLit); e.Op == token.AND && !lit {
			return nil, &notLoadTime{why: "`" + a.text(e) + "` points at a variable"}, true
		}
		if e.Op == token.ARROW {
			return nil, &notLoadTime{why: "`" + a.text(e) + "` receives from a channel"}, true
		}
		return []ast.Expr{e.X}, nil, true
	case *ast.StarExpr:
		return []ast.Expr{e.X}, nil, true
	case *ast.SelectorExpr:
		return []ast.Expr{e.X}, nil, true
	case *ast.IndexExpr:
		return []ast.Expr{e.X, e.Index}, nil, true
	case *ast.IndexListExpr:
		return append([]ast.Expr{e.X}, e.Indices...), nil, true
	case *ast.SliceExpr:
		return []ast.Expr{e.X, e.Low, e.High, e.Max}, nil, true
	case *ast.CompositeLit:
		return e.Elts, nil, true
	case *ast.KeyValueExpr:
		return []ast.Expr{e.Value}, nil, true
	}
	return nil, nil, false
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
	if v, ok := obj.(*types.Var); ok {
		if w := a.writtenElsewhere(v); w != "" {
			return false, &notLoadTime{why: "`" + a.text(e) + "` is written at " + w}
		}
	}
	return false, nil // another package's function, constant or variable no package of the module writes
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
			if w := a.writtenElsewhere(obj); w != "" {
				return false, &notLoadTime{why: "`" + id.Name + "` is written by another package, at " + w}
			}
			return false, nil // package-level, written only by its declaration and init
		}
		if no := a.paramWhy(id, obj); no != nil {
			return false, no
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
	name, _ := a.paramOfCaptured(v)
	return name
}

// paramWhy says why a parameter is no load-time value: one of each call,
// or, where a function literal inside its function holds the call, one
// the literal holds from when it was made.
func (a *analysis) paramWhy(id *ast.Ident, v *types.Var) *notLoadTime {
	fn, captured := a.paramOfCaptured(v)
	if fn == "" {
		return nil
	}
	if captured {
		return &notLoadTime{why: "`" + id.Name + "` is a parameter of " + fn + ", held by the function literal made there " +
			"(the same on each of its calls)", captured: true}
	}
	return &notLoadTime{why: "`" + id.Name + "` is a parameter of " + fn + ": it comes with each call"}
}

// paramOfCaptured is paramOf, and whether a function literal lies between
// the call and that function.
func (a *analysis) paramOfCaptured(v *types.Var) (string, bool) {
	literal := false
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
				return name, literal
			}
		}
		_, isLit := n.(*ast.FuncLit)
		literal = literal || isLit
	}
	return "", false
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

// A value the request cannot change: not a constant, but made at start and
// only read since (the method's receiver, its fields, a pointer to data it
// loaded, a variable defined once from those, the result of a call on
// those). A load-time call on such values cannot be hoisted to a package
// value, but it can be memoised by them: new data, a new key.

// defSite is where a function's local variable is defined.
type defSite struct {
	rhs   ast.Expr // its value (a call of several results for each of its variables)
	rng   ast.Expr // or the collection it ranges over
	plain bool     // declared with no value
}

// enclosingFunc is the declaration the call is in.
func (a *analysis) enclosingFunc() *ast.FuncDecl {
	for _, n := range a.path {
		if fd, ok := n.(*ast.FuncDecl); ok {
			return fd
		}
	}
	return nil
}

// receiverOf reports whether v is the receiver of the method the call is in.
func (a *analysis) receiverOf(v *types.Var) bool {
	fd := a.enclosingFunc()
	return fd != nil && fd.Recv != nil && fd.Recv.Pos() <= v.Pos() && v.Pos() < fd.Recv.End()
}

// localDefs maps the enclosing function's local variables to their definitions.
func (a *analysis) localDefs() map[types.Object]defSite {
	if a.defs != nil {
		return a.defs
	}
	a.defs = map[types.Object]defSite{}
	fd := a.enclosingFunc()
	if fd == nil || fd.Body == nil {
		return a.defs
	}
	info := a.pkg.TypesInfo
	def := func(id ast.Expr, d defSite) {
		if id, ok := id.(*ast.Ident); ok {
			if obj := info.Defs[id]; obj != nil {
				a.defs[obj] = d
			}
		}
	}
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok != token.DEFINE {
				break
			}
			for i, l := range n.Lhs {
				switch {
				case len(n.Rhs) == len(n.Lhs):
					def(l, defSite{rhs: n.Rhs[i]})
				case len(n.Rhs) == 1:
					def(l, defSite{rhs: n.Rhs[0]})
				}
			}
		case *ast.ValueSpec:
			for i, name := range n.Names {
				switch {
				case len(n.Values) == len(n.Names):
					def(name, defSite{rhs: n.Values[i]})
				case len(n.Values) == 1:
					def(name, defSite{rhs: n.Values[0]})
				default:
					def(name, defSite{plain: true})
				}
			}
		case *ast.RangeStmt:
			if n.Tok == token.DEFINE {
				def(n.Key, defSite{rng: n.X})
				def(n.Value, defSite{rng: n.X})
			}
		}
		return true
	})
	return a.defs
}

// stable reports why e is not a value the request cannot change; nil if it is.
func (a *analysis) stable(e ast.Expr) *notLoadTime {
	return a.stableDepth(e, 0)
}

func (a *analysis) stableDepth(e ast.Expr, depth int) *notLoadTime {
	if depth > 32 {
		return &notLoadTime{why: "`" + a.text(e) + "` is too deep a chain of definitions to follow"}
	}
	if _, no := a.loadTime(e, true); no == nil {
		return nil
	}
	check := func(es ...ast.Expr) *notLoadTime {
		for _, x := range es {
			if x == nil {
				continue
			}
			if no := a.stableDepth(x, depth+1); no != nil {
				return no
			}
		}
		return nil
	}
	switch e := e.(type) {
	case *ast.Ident:
		return a.identStable(e, depth)
	case *ast.SelectorExpr:
		if a.qualified(e) {
			_, no := a.qualifiedLoadTime(e)
			return no
		}
	case *ast.CallExpr:
		return a.callStable(e, depth)
	}
	kids, no, ok := a.operands(e)
	if no != nil {
		return no
	}
	if !ok {
		return &notLoadTime{why: "`" + a.text(e) + "` is not an expression probe can follow"}
	}
	return check(kids...)
}

func (a *analysis) identStable(id *ast.Ident, depth int) *notLoadTime {
	v, ok := a.pkg.TypesInfo.Uses[id].(*types.Var)
	if !ok {
		_, no := a.identLoadTime(id, true)
		return no
	}
	if pos, ok := a.written[v]; ok {
		if rhs := a.reaching(v); rhs != nil && v.Parent() != a.pkg.Types.Scope() {
			return a.stableDepth(rhs, depth+1)
		}
		return &notLoadTime{why: "`" + id.Name + "` is assigned at " + a.where(pos) + ", after load time"}
	}
	if a.receiverOf(v) {
		return nil // the value the method is called on: made before the request, read by it
	}
	if no := a.paramWhy(id, v); no != nil {
		return no
	}
	d, ok := a.localDefs()[v]
	switch {
	case !ok:
		return &notLoadTime{why: "`" + id.Name + "` is not defined in " + a.enclosingFunc().Name.Name + " (" + a.where(v.Pos()) + ")"}
	case d.rng != nil:
		return a.stableDepth(d.rng, depth+1)
	case d.plain:
		return &notLoadTime{why: "`" + id.Name + "` is declared without a value (" + a.where(v.Pos()) + ")"}
	}
	return a.stableDepth(d.rhs, depth+1)
}

// isContext reports whether t is context.Context: a call's cancellation and
// deadline, not an input of what it computes.
func isContext(t types.Type) bool {
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "context" && n.Obj().Name() == "Context"
}

func (a *analysis) callStable(e *ast.CallExpr, depth int) *notLoadTime {
	info := a.pkg.TypesInfo
	all := func(es []ast.Expr) *notLoadTime {
		for _, x := range es {
			if isContext(info.TypeOf(x)) {
				continue
			}
			if no := a.stableDepth(x, depth+1); no != nil {
				return no
			}
		}
		return nil
	}
	if tv, ok := info.Types[e.Fun]; ok && tv.IsType() { // a conversion
		return all(e.Args)
	}
	if id, ok := ast.Unparen(e.Fun).(*ast.Ident); ok {
		if b, ok := info.Uses[id].(*types.Builtin); ok {
			switch b.Name() {
			case "len", "cap", "min", "max", "complex", "real", "imag":
				return all(e.Args)
			}
			return &notLoadTime{why: "`" + a.text(e) + "` calls " + b.Name() + ", which makes, changes or reads state"}
		}
	}
	fn := typeFunc(info, e)
	if sel, ok := ast.Unparen(e.Fun).(*ast.SelectorExpr); ok && info.Selections[sel] != nil {
		// A method of a request's value: the request is the reason.
		if no := a.stableDepth(sel.X, depth+1); no != nil {
			return no
		}
	}
	if fn != nil && fn.Pkg() != nil && effectPackages[fn.Pkg().Path()] {
		return &notLoadTime{why: "`" + a.text(e) + "` calls " + fn.FullName() + ", called for its effects or a value that changes"}
	}
	if fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "fmt" &&
		!strings.HasPrefix(fn.Name(), "Sprint") && fn.Name() != "Errorf" && fn.Name() != "Append" {
		return &notLoadTime{why: "`" + a.text(e) + "` reads or writes a stream"}
	}
	if sel, ok := ast.Unparen(e.Fun).(*ast.SelectorExpr); ok {
		if id, ok := sel.X.(*ast.Ident); ok {
			if _, pkg := info.Uses[id].(*types.PkgName); pkg {
				return all(e.Args)
			}
		}
		if no := a.stableDepth(sel.X, depth+1); no != nil {
			return no
		}
		return all(e.Args)
	}
	if fn == nil { // a function value: the same one while what holds it is
		if no := a.stableDepth(e.Fun, depth+1); no != nil {
			return no
		}
	}
	return all(e.Args)
}

// rooted reports whether e reaches data the server held before the call:
// its receiver, a package-level variable, or what is read through them (a
// field, an element, a method's result). A value a call makes afresh from
// constants (a constructor, &T{}) is not: a pointer to it is new each time,
// nothing to memoise by.
func (a *analysis) rooted(e ast.Expr) bool { return a.rootedDepth(e, 0) }

func (a *analysis) rootedDepth(e ast.Expr, depth int) bool {
	if depth > 32 {
		return false
	}
	info := a.pkg.TypesInfo
	switch e := e.(type) {
	case *ast.Ident:
		v, ok := info.Uses[e].(*types.Var)
		switch {
		case !ok:
			return false
		case v.Parent() == a.pkg.Types.Scope() || a.receiverOf(v):
			return true
		case a.paramOf(v) != "":
			return false
		}
		if _, ok := a.written[v]; ok {
			rhs := a.reaching(v)
			return rhs != nil && a.rootedDepth(rhs, depth+1)
		}
		d, ok := a.localDefs()[v]
		switch {
		case !ok || d.plain:
			return false
		case d.rng != nil:
			return a.rootedDepth(d.rng, depth+1)
		}
		return a.rootedDepth(d.rhs, depth+1)
	case *ast.ParenExpr:
		return a.rootedDepth(e.X, depth+1)
	case *ast.StarExpr:
		return a.rootedDepth(e.X, depth+1)
	case *ast.IndexExpr:
		return a.rootedDepth(e.X, depth+1)
	case *ast.SliceExpr:
		return a.rootedDepth(e.X, depth+1)
	case *ast.SelectorExpr:
		if id, ok := e.X.(*ast.Ident); ok {
			if _, pkg := info.Uses[id].(*types.PkgName); pkg {
				_, isVar := info.Uses[e.Sel].(*types.Var)
				return isVar
			}
		}
		return a.rootedDepth(e.X, depth+1)
	case *ast.CallExpr:
		if tv, ok := info.Types[e.Fun]; ok && tv.IsType() {
			return len(e.Args) == 1 && a.rootedDepth(e.Args[0], depth+1)
		}
		if sel, ok := ast.Unparen(e.Fun).(*ast.SelectorExpr); ok && info.Selections[sel] != nil {
			return a.rootedDepth(sel.X, depth+1) // a method of held data: what it holds
		}
		if typeFunc(info, e) == nil {
			return a.rootedDepth(e.Fun, depth+1)
		}
		for _, arg := range e.Args {
			if a.rootedDepth(arg, depth+1) {
				return true
			}
		}
	}
	return false
}

// reaching is the value local variable v has at the call when v is
// assigned after its declaration: its last whole assignment (x = …) among
// the statements before the call in the blocks around it, none of which
// otherwise writes it, and no loop around the call writing it after; nil
// when not known.
func (a *analysis) reaching(v *types.Var) ast.Expr {
	info := a.pkg.TypesInfo
	if len(a.into[v]) > 0 {
		return nil
	}
	call := a.path[0].Pos()
	for _, n := range a.path {
		switch n := n.(type) {
		case *ast.ForStmt, *ast.RangeStmt:
			for _, w := range a.writes[v] {
				if n.Pos() <= w && w < n.End() && w > call {
					return nil // the next turn's value
				}
			}
		case *ast.FuncLit, *ast.FuncDecl:
			return nil
		case *ast.BlockStmt:
			for j := len(n.List) - 1; j >= 0; j-- {
				st := n.List[j]
				if st.Pos() > call {
					continue
				}
				if st.End() > call {
					continue // the statement holding the call
				}
				if rhs, ok := a.assigns(st, v); ok {
					return rhs
				}
				for _, w := range a.writes[v] {
					if st.Pos() <= w && w < st.End() {
						return nil // written on some paths only
					}
				}
				for id, obj := range info.Defs {
					if obj == v && st.Pos() <= id.Pos() && id.Pos() < st.End() {
						return nil // declared within: not one the blocks above see
					}
				}
			}
		}
	}
	return nil
}

// assigns is the value statement st gives v as a whole, if it does: `v =
// e`, `v := e`, `var v = e`.
func (a *analysis) assigns(st ast.Stmt, v *types.Var) (ast.Expr, bool) {
	info := a.pkg.TypesInfo
	is := func(e ast.Expr) bool {
		id, ok := e.(*ast.Ident)
		return ok && (info.Uses[id] == v || info.Defs[id] == v)
	}
	switch st := st.(type) {
	case *ast.AssignStmt:
		if st.Tok != token.ASSIGN && st.Tok != token.DEFINE {
			return nil, false
		}
		for i, l := range st.Lhs {
			if !is(l) {
				continue
			}
			if len(st.Rhs) == len(st.Lhs) {
				return st.Rhs[i], true
			}
			return st.Rhs[0], true
		}
	case *ast.DeclStmt:
		if gd, ok := st.Decl.(*ast.GenDecl); ok {
			for _, sp := range gd.Specs {
				vs, ok := sp.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for i, name := range vs.Names {
					if info.Defs[name] != v {
						continue
					}
					switch {
					case len(vs.Values) == len(vs.Names):
						return vs.Values[i], true
					case len(vs.Values) == 1:
						return vs.Values[0], true
					}
					return nil, false
				}
			}
		}
	}
	return nil, false
}

// valueOf is a local variable's value at the call: its definition, or the
// assignment that reaches the call; nil if not known.
func (a *analysis) valueOf(v *types.Var) ast.Expr {
	if _, ok := a.written[v]; ok {
		return a.reaching(v)
	}
	if d, ok := a.localDefs()[v]; ok && d.rhs != nil {
		return d.rhs
	}
	return nil
}
