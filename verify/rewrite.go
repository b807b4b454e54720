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
	// MemoHeld is a load-time call on values the server made before the
	// request and only reads (its receiver, their fields, a pointer to data
	// it loaded): memoised by those values, bounded, as MemoArgs.
	MemoHeld Form = "memo-by-held-value"
	// OncePerLiteral is a load-time call on a function literal's captured
	// parameters: done once in the function that makes the literal.
	OncePerLiteral Form = "once-per-literal"
)

// Variant is a rewrite of one file of the user's source.
type Variant struct {
	Class Class
	Form  Form
	Call  string // the call rewritten, as the source writes it
	// ReceiverOf is the hot call, when what was rewritten is the making
	// of the value it is a method on (Call), not the hot call itself.
	ReceiverOf string
	Frame      Frame  // the frame whose line holds it
	Root       string // the module's folder
	File       string // the file rewritten (absolute)
	Original   []byte
	Rewritten  []byte
}

// NotRewritable is a call probe cannot do once, and why, in one line.
type NotRewritable struct {
	Why     string
	perCall bool // because of a value made per call: a caller's frame may pass a constant
	// up: the work is the frame's function as a whole (the runtime's, or
	// effects on values the function was given or made): its caller's
	// call of it is tried, whatever the class.
	up bool
	// intoParams: up because the call writes into values the function was
	// given: the caller's call must not pass it shared ones.
	intoParams bool
}

func (e *NotRewritable) Error() string { return "not rewritable: " + e.Why }

// PerCall says the call's input is made on each call, up to the outermost
// frame tried: the source's own evidence that the work is not load-time.
func (e *NotRewritable) PerCall() bool { return e.perCall }

// memoBound is how many inputs a memo keeps: enough for the inputs a
// microload repeats, bounded so a flood of distinct ones cannot grow it.
const memoBound = 4096

// Rewrite finds the call at site in the module holding dir and rewrites it
// as class says: load-time work once (or once per value of the package-level
// collection it ranges over, or, when its inputs are values the server holds
// since start rather than constants, once per value of those), cacheable
// work once per input. A call that cannot be rewritten is a *NotRewritable
// error; others are load failures.
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
	var first *NotRewritable // the last frame's reason
	callee := site.Callee
	writes := false // the frame below writes into what it is given
	for _, fr := range site.Frames {
		v, err := rewriteFrame(root, fr, callee, class, writes)
		if err == nil {
			return v, nil
		}
		var nr *NotRewritable
		if !errors.As(err, &nr) {
			return nil, err
		}
		// The reason of the frame the walk up the stack ends at: why the
		// value a helper was given is made per call.
		first = nr
		// A helper's per-call input is its caller's argument: compile(text)
		// called with a constant is load-time one frame up, and a helper
		// that makes its own receiver from what it is given is memoised by
		// that, one frame up.
		if !nr.up && !nr.perCall {
			break
		}
		writes = nr.intoParams
		callee = fr.Func
	}
	return nil, first
}

func rewriteFrame(root string, fr Frame, callee string, class Class, writes bool) (*Variant, error) {
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
	a := newAnalysis(pkg, path)
	if fn := enclosingDecl(path); fn == nil || fn.Name.Name != declName(fr.Func) {
		return nil, &NotRewritable{Why: fmt.Sprintf("line %d of %s is not in %s: the source is not the one profiled",
			fr.Line, filepath.Base(file), fr.Func)}
	}
	plan, err := planCall(a, call, class, writes)
	receiverOf := ""
	var nr *NotRewritable
	if class == LoadTime && errors.As(err, &nr) {
		// A method on a value the function makes per call from
		// constants (a template parsed per request, then executed; a
		// renderer built, then run): the call that makes it is what to
		// do once, whatever the method does with it.
		if made, ok := a.receiverMadeBy(call); ok {
			mpath, _ := astutil.PathEnclosingInterval(syntax, made.Pos(), made.End())
			ma := newAnalysis(pkg, mpath)
			if mplan, merr := planCall(ma, made, LoadTime, false); merr == nil && mplan.form == Once {
				receiverOf = a.text(call)
				a, call, plan, err = ma, made, mplan, nil
				fr.Line = pkg.Fset.Position(made.Pos()).Line
			}
		}
	}
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
	return &Variant{Class: class, Form: plan.form, Call: a.text(call), ReceiverOf: receiverOf, Frame: fr, Root: root,
		File: file, Original: src, Rewritten: out}, nil
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
		if strings.HasPrefix(pprofKey(callee), "runtime.") {
			// A map literal, make, append: the compiler's call, the frame's
			// own work; its caller's call of it is what to do once.
			return nil, &NotRewritable{Why: callee + " at " + where + " is the runtime's, called by the code itself: " +
				"no call of the source's to do once", up: true}
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
	if funcKey(fn) == key || funcKeyByPath(fn) == key {
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
	keys    []ast.Expr                // what the memo is keyed by, in order: arguments, or variables they are made of
	also    map[ast.Expr]int          // more uses in the call of a variable keyed: the key's index
	held    bool                      // a key is a value held since start, not a constant nor the call's own input
	subst   map[types.Object]ast.Expr // a variable keyed by what it is made of: its value, made again in the memo
	results []types.Type
	maker   *maker // the function that makes the literal holding the call, for OncePerLiteral
}

// captured takes e, a captured parameter's value, into the plan: the call
// is then done once per literal made, when e reads nothing else.
func (p *callPlan) captured(e ast.Expr, no *notLoadTime) *NotRewritable {
	m, why, perCall := p.a.capturedOnly(e)
	switch {
	case perCall:
		return &NotRewritable{Why: why, perCall: true} // the request's input beside the literal's
	case m == nil:
		return &NotRewritable{Why: no.why + ", but not done once per literal made: " + why}
	case p.maker != nil && p.maker.stmt != m.stmt:
		return &NotRewritable{Why: no.why + ", but not done once per literal made: its inputs are held by different literals"}
	}
	p.maker = m
	return nil
}

// planCall decides whether call can be done once and how. writes: the
// callee writes into what it is given (a frame below found it), so the call
// must not give it values the server holds.
func planCall(a *analysis, call *ast.CallExpr, class Class, writes bool) (*callPlan, error) {
	info := a.pkg.TypesInfo
	fn := typeFunc(info, call)
	if _, stmt := a.path[0].(*ast.ExprStmt); stmt {
		nr := &NotRewritable{Why: "`" + a.text(call) + "`'s result is dropped: it is called for its effects"}
		if fn != nil && !isInterfaceMethod(fn) && (fn.Pkg() == nil || !effectPackages[fn.Pkg().Path()]) {
			// Effects on values the function made or was given: the
			// function's own call may be done once, one frame up.
			nr.up, nr.intoParams = a.effectsOnOwn(call)
		}
		return nil, nr
	}
	if _, isGo := a.path[0].(*ast.GoStmt); isGo {
		return nil, &NotRewritable{Why: "`" + a.text(call) + "` is started as a goroutine: it is called for its effects"}
	}
	if _, isDefer := a.path[0].(*ast.DeferStmt); isDefer {
		return nil, &NotRewritable{Why: "`" + a.text(call) + "` is deferred: it is called for its effects"}
	}
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
	p := &callPlan{a: a, call: call, form: Once, also: map[ast.Expr]int{}}
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
	shared := func(e ast.Expr) *NotRewritable {
		if !writes || !isReference(info.TypeOf(e)) {
			return nil
		}
		if !a.rooted(e) || a.stable(e) != nil {
			return nil // made per call: the callee's writes stay in it
		}
		return &NotRewritable{Why: "`" + a.text(e) + "` is held by the server and " + fn.Name() +
			" writes into what it is given: done once, its writes would be lost"}
	}
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && info.Selections[sel] != nil {
		if nr := shared(sel.X); nr != nil {
			return nil, nr
		}
		if _, no := a.loadTime(sel.X, false); no != nil {
			sno := a.stable(sel.X)
			if sno != nil && sno.captured && class == LoadTime {
				if nr := p.captured(sel.X, sno); nr != nil {
					return nil, nr
				}
			} else if sno != nil {
				return nil, &NotRewritable{Why: "a method on a value made per call: " + because(no, sno), perCall: !sno.captured}
			} else if err := p.key(sel.X, true); err != nil {
				err.Why = "a method on a value made per call: " + err.Why
				err.perCall = true
				return nil, err
			}
		}
	}
	ranged := false
	for _, arg := range call.Args {
		if nr := shared(arg); nr != nil {
			return nil, nr
		}
		r, no := a.loadTime(arg, class == LoadTime)
		if no == nil && !r {
			continue // the same on every call: stays in the call
		}
		held := no == nil // ranging over a load-time collection: its values are held
		if no != nil {
			sno := a.stable(arg)
			if class == LoadTime && sno != nil && sno.captured {
				// A literal's captured parameter is no input of each call:
				// the call is done once per literal made.
				if nr := p.captured(arg, sno); nr != nil {
					return nil, nr
				}
				continue
			}
			if class == LoadTime && sno != nil {
				return nil, &NotRewritable{Why: because(no, sno), perCall: !sno.captured}
			}
			held = sno == nil
		}
		ranged = ranged || r
		if err := p.key(arg, held); err != nil {
			// An input that is made per call: a caller's frame may pass
			// what it is made of.
			err.perCall = true
			return nil, err
		}
	}
	p.alsoUses()
	if p.maker != nil {
		return p.perLiteral(ranged)
	}
	switch {
	case len(p.keys) == 0:
		if len(p.results) > 2 {
			return nil, &NotRewritable{Why: fmt.Sprintf("`%s` returns %d values (sync.OnceValues holds two)", a.text(call),
				len(p.results))}
		}
	case ranged:
		p.form = MemoRange
	case p.held && class == LoadTime:
		p.form = MemoHeld
	default:
		p.form = MemoArgs
	}
	return p, nil
}

// sharedResultWritten says why the call's result cannot be shared between
// calls: the variable it is assigned to is written into afterwards (x[i] =,
// x.f =, &x, or a method whose body writes its receiver), so each call
// would see the others' changes. Empty if not seen.
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
		for _, pos := range a.into[obj] {
			if pos != id.Pos() && obj.Parent() != a.pkg.Types.Scope() {
				return "`" + id.Name + "`, the result, is written at " + a.where(pos) +
					": one shared result would carry each call's changes to the next"
			}
		}
		if obj != nil && obj.Parent() != a.pkg.Types.Scope() {
			if m := a.resultMethodWrites(obj); m != "" {
				return "`" + id.Name + "`, the result, is changed by " + m +
					", whose body writes its receiver: one shared result would carry each call's changes to the next"
			}
		}
	}
	return ""
}

// because joins why a value is not load-time and why it is not held since
// start, when the second says more.
func because(no, held *notLoadTime) string {
	if held == nil || held.why == no.why {
		return no.why
	}
	return no.why + "; " + held.why
}

// key adds e to the memo's key: by its value when that can key a map (a
// pointer too, when the value is held since start: new data, new address),
// else by the variables it is made of, the whole computed from them.
func (p *callPlan) key(e ast.Expr, held bool) *NotRewritable {
	info := p.a.pkg.TypesInfo
	why := keyable(info.TypeOf(e), held && p.a.rooted(e))
	if why == "" {
		if w := p.a.pointeeWritten(info.TypeOf(e)); w != "" {
			return &NotRewritable{Why: "`" + p.a.text(e) + "` would key the memo by address, but " + w +
				": new data at the same address"}
		}
		p.addKey(e, held)
		return nil
	}
	if held && keyable(info.TypeOf(e), true) == "" {
		why = "a pointer made on each call, not one the server holds (a new address each time)"
	}
	nothing := &NotRewritable{Why: "`" + p.a.text(e) + "` is " + why + ": nothing to memoise by"}
	heldOf := func(x ast.Expr) bool { return (held || p.a.stable(x) == nil) && p.a.rooted(x) }
	leaves, ok := p.a.leaves(e, func(x ast.Expr) bool { return keyable(info.TypeOf(x), heldOf(x)) == "" })
	if ok && len(leaves) == 1 && leaves[0] == e && p.subst == nil {
		// A variable held since start that cannot key a map (a []byte made
		// from the snapshot): keyed by what its value is made of, and made
		// again from those in the memo.
		if v, isVar := info.Uses[e.(*ast.Ident)].(*types.Var); isVar && p.a.stable(e) == nil {
			if rhs := p.a.valueOf(v); rhs != nil {
				if _, tuple := info.TypeOf(rhs).(*types.Tuple); !tuple {
					p.subst = map[types.Object]ast.Expr{v: rhs}
					if err := p.key(rhs, true); err != nil {
						p.subst = nil
						return nothing
					}
					return nil
				}
			}
		}
	}
	if !ok || len(leaves) == 0 || (len(leaves) == 1 && leaves[0] == e) {
		return nothing
	}
	for _, x := range leaves {
		if w := p.a.pointeeWritten(info.TypeOf(x)); w != "" {
			return &NotRewritable{Why: "`" + p.a.text(x) + "` would key the memo by address, but " + w +
				": new data at the same address"}
		}
		p.addKey(x, heldOf(x))
	}
	return nil
}

func (p *callPlan) addKey(e ast.Expr, held bool) {
	info := p.a.pkg.TypesInfo
	for _, k := range p.keys {
		kid, kIsID := k.(*ast.Ident)
		id, isID := e.(*ast.Ident)
		if kIsID && isID && info.Uses[id] == info.Uses[kid] || !kIsID && !isID && types.ExprString(k) == types.ExprString(e) {
			return // keyed already
		}
	}
	p.keys = append(p.keys, e)
	p.held = p.held || held
}

// alsoUses finds the call's other uses of what is keyed (outside the
// keys): each becomes the memo's input too, as a local is out of scope at
// package level.
func (p *callPlan) alsoUses() {
	for n, i := range p.keyUses(p.call) {
		if n != p.keys[i] {
			p.also[n] = i
		}
	}
}

// keyUses are the expressions under root that are a key: the same variable,
// or the same expression of variables (a.f, m[k]).
func (p *callPlan) keyUses(root ast.Node) map[ast.Expr]int {
	info := p.a.pkg.TypesInfo
	out := map[ast.Expr]int{}
	var walk func(n ast.Node) bool
	walk = func(n ast.Node) bool {
		e, ok := n.(ast.Expr)
		if !ok {
			return true
		}
		for i, k := range p.keys {
			kid, kIsID := k.(*ast.Ident)
			id, isID := e.(*ast.Ident)
			switch {
			case kIsID != isID:
				continue
			case isID && info.Uses[id] != nil && info.Uses[id] == info.Uses[kid]:
			case !isID && types.ExprString(e) == types.ExprString(k):
			default:
				continue
			}
			out[e] = i
			return false
		}
		if sel, ok := e.(*ast.SelectorExpr); ok {
			ast.Inspect(sel.X, walk) // not the field's name
			return false
		}
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			inspectKeyValue(info, kv, walk)
			return false
		}
		return true
	}
	ast.Inspect(root, walk)
	return out
}

// leaves are the largest parts of e that are not load-time and that ok
// says can key a memo: variables, or their fields and elements (a.cat, not
// a, whose field may be set anew); false when e holds what cannot be made
// again from them (a function literal) or a variable that cannot key one.
func (a *analysis) leaves(e ast.Expr, ok func(ast.Expr) bool) ([]ast.Expr, bool) {
	info := a.pkg.TypesInfo
	var out []ast.Expr
	good := true
	var walk func(n ast.Node) bool
	walk = func(n ast.Node) bool {
		x, isExpr := n.(ast.Expr)
		if !isExpr || !good {
			return good
		}
		if _, lit := x.(*ast.FuncLit); lit {
			good = false
			return false
		}
		if tv, has := info.Types[x]; has && (tv.IsType() || tv.Value != nil) {
			return false
		}
		switch y := x.(type) {
		case *ast.Ident, *ast.SelectorExpr, *ast.IndexExpr, *ast.StarExpr:
			if sel, isSel := y.(*ast.SelectorExpr); isSel {
				if id, isID := sel.X.(*ast.Ident); isID {
					if _, pkg := info.Uses[id].(*types.PkgName); pkg {
						return false // a package's name
					}
				}
				if s := info.Selections[sel]; s != nil && s.Kind() != types.FieldVal {
					ast.Inspect(sel.X, walk) // a method value: its receiver
					return false
				}
			}
			if id, isID := y.(*ast.Ident); isID {
				if _, isVar := info.Uses[id].(*types.Var); !isVar {
					return false // a function, a nil
				}
			}
			if _, no := a.loadTime(x, false); no == nil {
				return false
			}
			if x != e && ok(x) {
				out = append(out, x)
				return false
			}
			if id, isID := y.(*ast.Ident); isID {
				if x != e {
					good = false // a variable that cannot key a memo
				} else {
					out = append(out, id)
				}
				return false
			}
			if sel, isSel := y.(*ast.SelectorExpr); isSel {
				ast.Inspect(sel.X, walk)
				return false
			}
		case *ast.KeyValueExpr:
			inspectKeyValue(info, y, walk)
			return false
		}
		return true
	}
	ast.Inspect(e, walk)
	return out, good
}

// inspectKeyValue walks a composite literal's element: its value, and its
// key unless the key is a struct field's name (no variable's use).
func inspectKeyValue(info *types.Info, kv *ast.KeyValueExpr, walk func(ast.Node) bool) {
	if id, isID := kv.Key.(*ast.Ident); !isID || !isField(info.Uses[id]) {
		ast.Inspect(kv.Key, walk)
	}
	ast.Inspect(kv.Value, walk)
}

func isField(obj types.Object) bool {
	v, ok := obj.(*types.Var)
	return ok && v.IsField()
}

// effectsOnOwn reports whether a call made for its effects writes only into
// values its function made per call or was given (up), and whether into the
// latter (intoParams): the writes of the function's own call land in its
// caller's values, not the server's.
func (a *analysis) effectsOnOwn(call *ast.CallExpr) (up, intoParams bool) {
	info := a.pkg.TypesInfo
	var targets []ast.Expr
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && info.Selections[sel] != nil {
		targets = append(targets, sel.X)
	}
	for _, arg := range call.Args {
		if isReference(info.TypeOf(arg)) && !isWriterWrite(typeFunc(info, call)) {
			targets = append(targets, arg)
		}
	}
	for _, t := range targets {
		if u, ok := ast.Unparen(t).(*ast.UnaryExpr); ok && u.Op == token.AND {
			t = u.X
		}
		id := baseIdent(t)
		if id == nil {
			return false, false
		}
		v, ok := info.Uses[id].(*types.Var)
		if !ok || v.Parent() == a.pkg.Types.Scope() {
			return false, false
		}
		switch {
		case a.receiverOf(v) || a.paramOf(v) != "":
			intoParams = true
		case a.stable(id) == nil:
			return false, false // a local naming what the server holds
		}
	}
	return len(targets) > 0, intoParams
}

// isWriterWrite reports whether fn is an io.Writer's Write, which by its
// contract does not modify the bytes it is given.
func isWriterWrite(fn *types.Func) bool {
	if fn == nil || fn.Name() != "Write" {
		return false
	}
	sig, _ := fn.Type().(*types.Signature)
	if sig == nil || sig.Recv() == nil || sig.Params().Len() != 1 || sig.Results().Len() != 2 {
		return false
	}
	sl, ok := sig.Params().At(0).Type().(*types.Slice)
	if !ok || !types.Identical(sl.Elem(), types.Typ[types.Byte]) {
		return false
	}
	return types.Identical(sig.Results().At(0).Type(), types.Typ[types.Int]) &&
		types.Identical(sig.Results().At(1).Type(), types.Universe.Lookup("error").Type())
}

// isReference reports whether a value of t gives access to memory the callee
// can write: a pointer, slice, map, channel or interface.
func isReference(t types.Type) bool {
	if t == nil {
		return false
	}
	switch t.Underlying().(type) {
	case *types.Pointer, *types.Slice, *types.Map, *types.Chan, *types.Interface:
		return true
	}
	return false
}

// keyable is unkeyable, a pointer allowed when it is held since start.
func keyable(t types.Type, held bool) string {
	if held {
		if _, ptr := t.Underlying().(*types.Pointer); ptr {
			return ""
		}
		if s, ok := t.Underlying().(*types.Struct); ok {
			for f := range s.Fields() {
				if why := keyable(f.Type(), true); why != "" {
					return why
				}
			}
			return ""
		}
	}
	return unkeyable(t)
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

// receiverMadeBy is the call that makes the local variable call's method
// is called on, when that variable has that one definition and is never
// assigned again: `t, err := template.New("x").Parse(text)` for t.Execute.
func (a *analysis) receiverMadeBy(call *ast.CallExpr) (*ast.CallExpr, bool) {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || a.pkg.TypesInfo.Selections[sel] == nil {
		return nil, false
	}
	id, ok := ast.Unparen(sel.X).(*ast.Ident)
	if !ok {
		return nil, false
	}
	v, ok := a.pkg.TypesInfo.Uses[id].(*types.Var)
	if !ok {
		return nil, false
	}
	if _, again := a.written[v]; again {
		return nil, false
	}
	d, ok := a.localDefs()[v]
	if !ok || d.rng != nil || d.plain {
		return nil, false
	}
	made, ok := ast.Unparen(d.rhs).(*ast.CallExpr)
	return made, ok
}
