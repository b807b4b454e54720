package verify

import (
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/ast/astutil"
	"golang.org/x/tools/go/packages"
)

// Form is how a variant does the work once.
type Form string

const (
	Once      Form = "once"                // hoisted whole to a sync.OnceValue(s)
	MemoRange Form = "memo-by-range-value" // memoised by the load-time collection's value it ranges over
	MemoArgs  Form = "memo-by-arguments"   // memoised by the call's own inputs, bounded
)

// Variant is a rewrite of one file of the user's source.
type Variant struct {
	Class     Class
	Form      Form
	Call      string // the call rewritten, as the source writes it
	Frame     Frame  // the frame whose line holds it
	Root      string // the module's folder
	File      string // the file rewritten (absolute)
	Original  []byte
	Rewritten []byte
}

// NotRewritable is a call probe cannot do once, and why, in one line.
type NotRewritable struct {
	Why     string
	perCall bool // because of a value made per call: a caller's frame may pass a constant
}

func (e *NotRewritable) Error() string { return "not rewritable: " + e.Why }

// memoBound is how many inputs a memo keeps: enough for the inputs a
// microload repeats, bounded so a flood of distinct ones cannot grow it.
const memoBound = 4096

// Rewrite finds the call at site in the module holding dir and rewrites it
// as class says: load-time work once (or once per value of the package-level
// collection it ranges over), cacheable work once per input. A call that
// cannot be rewritten is a *NotRewritable error; others are load failures.
func Rewrite(dir string, site Site, class Class) (*Variant, error) {
	if class != LoadTime && class != Cacheable {
		return nil, fmt.Errorf("verify: class %q is neither %s nor %s", class, LoadTime, Cacheable)
	}
	if len(site.Frames) == 0 {
		return nil, errors.New("verify: the site has no frame of the target's own")
	}
	root, err := moduleRoot(dir)
	if err != nil {
		return nil, err
	}
	var first *NotRewritable
	callee := site.Callee
	for _, fr := range site.Frames {
		v, err := rewriteFrame(root, fr, callee, class)
		if err == nil {
			return v, nil
		}
		var nr *NotRewritable
		if !errors.As(err, &nr) {
			return nil, err
		}
		if first == nil {
			first = nr
		}
		// A helper's per-call input is its caller's argument: compile(text)
		// called with a constant is load-time one frame up.
		if class != LoadTime || !nr.perCall {
			break
		}
		callee = fr.Func
	}
	return nil, first
}

func rewriteFrame(root string, fr Frame, callee string, class Class) (*Variant, error) {
	file, err := sourceFile(root, fr.File)
	if err != nil {
		return nil, err
	}
	pkg, err := loadFile(root, file)
	if err != nil {
		return nil, err
	}
	var syntax *ast.File
	for i, f := range pkg.CompiledGoFiles {
		if f == file && i < len(pkg.Syntax) {
			syntax = pkg.Syntax[i]
		}
	}
	if syntax == nil {
		return nil, fmt.Errorf("%s: not parsed", file)
	}
	call, err := callAt(pkg, syntax, fr.Line, callee)
	if err != nil {
		return nil, err
	}
	path, _ := astutil.PathEnclosingInterval(syntax, call.Pos(), call.End())
	a := newAnalysis(pkg, path[1:])
	if fn := enclosingDecl(path); fn == nil || fn.Name.Name != declName(fr.Func) {
		return nil, &NotRewritable{Why: fmt.Sprintf("line %d of %s is not in %s: the source is not the one profiled",
			fr.Line, filepath.Base(file), fr.Func)}
	}
	plan, err := planCall(a, call, class)
	if err != nil {
		return nil, err
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	out, err := plan.apply(syntax, src)
	if err != nil {
		return nil, err
	}
	return &Variant{Class: class, Form: plan.form, Call: a.text(call), Frame: fr, Root: root, File: file,
		Original: src, Rewritten: out}, nil
}

// callAt is the innermost call at line whose callee pprof names callee (any
// call when callee is empty and the line holds one).
func callAt(pkg *packages.Package, f *ast.File, line int, callee string) (*ast.CallExpr, error) {
	var all, named []*ast.CallExpr
	ast.Inspect(f, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if pkg.Fset.Position(c.Pos()).Line <= line && line <= pkg.Fset.Position(c.End()).Line {
			if tv, ok := pkg.TypesInfo.Types[c.Fun]; ok && tv.IsType() {
				return true // a conversion
			}
			all = append(all, c)
			if fn := typeFunc(pkg.TypesInfo, c); fn != nil && callee != "" && calls(fn, callee) {
				named = append(named, c)
			}
		}
		return true
	})
	where := fmt.Sprintf("%s:%d", filepath.Base(pkg.Fset.Position(f.Pos()).Filename), line)
	pick := named
	if callee == "" {
		pick = all
	}
	if len(pick) == 0 {
		what := "no call"
		if callee != "" {
			what = "no call to " + callee
		}
		return nil, &NotRewritable{Why: what + " at " + where + ": the source is not the one profiled"}
	}
	// Innermost: the smallest span (ast.Inspect visits outer calls first).
	sort.SliceStable(pick, func(i, j int) bool { return pick[i].End()-pick[i].Pos() < pick[j].End()-pick[j].Pos() })
	return pick[0], nil
}

// calls reports whether a call of fn in the source is a call of the
// function pprof names callee: the same function, or an interface's method
// of the same name (the profile names the concrete method that ran).
func calls(fn *types.Func, callee string) bool {
	key := pprofKey(callee)
	if funcKey(fn) == key {
		return true
	}
	return isInterfaceMethod(fn) && strings.HasSuffix(key, "."+fn.Name())
}

func isInterfaceMethod(fn *types.Func) bool {
	sig, _ := fn.Type().(*types.Signature)
	return sig != nil && sig.Recv() != nil && types.IsInterface(sig.Recv().Type())
}

func enclosingDecl(path []ast.Node) *ast.FuncDecl {
	for _, n := range path {
		if fd, ok := n.(*ast.FuncDecl); ok {
			return fd
		}
	}
	return nil
}

// callPlan is what a rewrite will do to one call.
type callPlan struct {
	a       *analysis
	call    *ast.CallExpr
	form    Form
	keys    []ast.Expr // arguments the memo is keyed by, in order
	results []types.Type
}

// planCall decides whether call can be done once and how.
func planCall(a *analysis, call *ast.CallExpr, class Class) (*callPlan, error) {
	info := a.pkg.TypesInfo
	if _, stmt := a.path[0].(*ast.ExprStmt); stmt {
		return nil, &NotRewritable{Why: "`" + a.text(call) + "`'s result is dropped: it is called for its effects"}
	}
	if _, isGo := a.path[0].(*ast.GoStmt); isGo {
		return nil, &NotRewritable{Why: "`" + a.text(call) + "` is started as a goroutine: it is called for its effects"}
	}
	if _, isDefer := a.path[0].(*ast.DeferStmt); isDefer {
		return nil, &NotRewritable{Why: "`" + a.text(call) + "` is deferred: it is called for its effects"}
	}
	fn := typeFunc(info, call)
	if fn == nil {
		return nil, &NotRewritable{Why: "`" + a.text(call) + "` calls a function value, which may differ per call"}
	}
	if isInterfaceMethod(fn) {
		return nil, &NotRewritable{Why: "`" + a.text(call) + "` calls an interface's method: " +
			"the code run depends on the value"}
	}
	if fn.Pkg() != nil && effectPackages[fn.Pkg().Path()] {
		return nil, &NotRewritable{Why: fn.FullName() + " is called for its effects or a value that changes"}
	}
	p := &callPlan{a: a, call: call, form: Once}
	switch t := info.TypeOf(call).(type) {
	case *types.Tuple:
		for i := range t.Len() {
			p.results = append(p.results, t.At(i).Type())
		}
	case nil:
	default:
		p.results = []types.Type{t}
	}
	if len(p.results) == 0 {
		return nil, &NotRewritable{Why: "`" + a.text(call) + "` returns nothing: it is called for its effects"}
	}
	for _, t := range p.results {
		if typeParameterIn(t) {
			return nil, &NotRewritable{Why: "`" + a.text(call) + "`'s result type depends on a type parameter, " +
				"which a package-level value cannot have"}
		}
	}
	if why := a.sharedResultWritten(call); why != "" {
		return nil, &NotRewritable{Why: why}
	}
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && info.Selections[sel] != nil {
		if _, no := a.loadTime(sel.X, false); no != nil {
			return nil, &NotRewritable{Why: "a method on a value made per call: " + no.why, perCall: true}
		}
	}
	ranged := false
	for _, arg := range call.Args {
		r, no := a.loadTime(arg, class == LoadTime)
		switch {
		case no == nil && !r:
			continue // the same on every call: stays in the call
		case no != nil && class == LoadTime:
			return nil, &NotRewritable{Why: no.why, perCall: true}
		}
		ranged = ranged || r
		t := info.TypeOf(arg)
		if why := unkeyable(t); why != "" {
			return nil, &NotRewritable{Why: "`" + a.text(arg) + "` is " + why + ": nothing to memoise by"}
		}
		p.keys = append(p.keys, arg)
	}
	switch {
	case len(p.keys) == 0:
		if len(p.results) > 2 {
			return nil, &NotRewritable{Why: fmt.Sprintf("`%s` returns %d values (sync.OnceValues holds two)", a.text(call),
				len(p.results))}
		}
	case ranged:
		p.form = MemoRange
	default:
		p.form = MemoArgs
	}
	return p, nil
}

// sharedResultWritten says why the call's result cannot be shared between
// calls: the variable it is assigned to is written into afterwards (x[i] =,
// x.f =, &x), so each call would see the others' changes. Empty if not seen;
// what the code does through the result's methods is left to the replies.
func (a *analysis) sharedResultWritten(call *ast.CallExpr) string {
	var lhs []ast.Expr
	switch p := a.path[0].(type) {
	case *ast.AssignStmt:
		if len(p.Rhs) == 1 && p.Rhs[0] == call {
			lhs = p.Lhs
		}
	case *ast.ValueSpec:
		if len(p.Values) == 1 && p.Values[0] == call {
			for _, n := range p.Names {
				lhs = append(lhs, n)
			}
		}
	}
	for _, e := range lhs {
		id, ok := e.(*ast.Ident)
		if !ok {
			continue
		}
		obj := a.pkg.TypesInfo.Defs[id]
		if obj == nil {
			obj = a.pkg.TypesInfo.Uses[id]
		}
		for _, pos := range a.writes[obj] {
			if pos != id.Pos() && obj.Parent() != a.pkg.Types.Scope() {
				return "`" + id.Name + "`, the result, is written at " + a.where(pos) +
					": one shared result would carry each call's changes to the next"
			}
		}
	}
	return ""
}

// typeParameterIn reports whether t mentions a type parameter.
func typeParameterIn(t types.Type) bool {
	switch t := t.(type) {
	case *types.TypeParam:
		return true
	case *types.Pointer:
		return typeParameterIn(t.Elem())
	case *types.Slice:
		return typeParameterIn(t.Elem())
	case *types.Array:
		return typeParameterIn(t.Elem())
	case *types.Chan:
		return typeParameterIn(t.Elem())
	case *types.Map:
		return typeParameterIn(t.Key()) || typeParameterIn(t.Elem())
	case *types.Named:
		for arg := range t.TypeArgs().Types() {
			if typeParameterIn(arg) {
				return true
			}
		}
	case *types.Signature:
		for _, tu := range []*types.Tuple{t.Params(), t.Results()} {
			for v := range tu.Variables() {
				if typeParameterIn(v.Type()) {
					return true
				}
			}
		}
	case *types.Struct:
		for f := range t.Fields() {
			if typeParameterIn(f.Type()) {
				return true
			}
		}
	}
	return false
}

// unkeyable says why values of t cannot key a memo; empty if they can. A
// pointer or interface is comparable but by identity, not by the value the
// call reads.
func unkeyable(t types.Type) string {
	switch u := t.Underlying().(type) {
	case *types.Basic:
		if u.Info()&types.IsUntyped != 0 && u.Kind() == types.UntypedNil {
			return "nil"
		}
		return ""
	case *types.Array:
		return unkeyable(u.Elem())
	case *types.Struct:
		for i := range u.NumFields() {
			if why := unkeyable(u.Field(i).Type()); why != "" {
				return why
			}
		}
		return ""
	case *types.Pointer:
		return "a pointer (compared by address, not by what it points at)"
	case *types.Interface:
		return "an interface (its dynamic value may not be comparable)"
	}
	return "a " + types.TypeString(t, nil) + ", which is not comparable"
}

// position of a node in the file's bytes.
func (p *callPlan) offset(pos token.Pos) int { return p.a.pkg.Fset.Position(pos).Offset }
