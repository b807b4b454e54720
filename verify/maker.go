package verify

import (
	"fmt"
	"go/ast"
	"go/types"
)

// A handler's maker (func makeList(items []string) http.HandlerFunc {
// return func(w, r) { json.Marshal(items) … } }) gives the literal it makes
// values that stay the same for the literal's life. A load-time call whose
// inputs are only those parameters, constants and package-level values is
// done once per literal made: in the maker, just before the statement that
// makes the literal.

// maker is where a call held by a function literal is done once per
// literal made: the function whose parameters the call reads, and that
// function's statement, directly in a block, that makes the literal.
type maker struct {
	fn   ast.Node // *ast.FuncDecl or *ast.FuncLit
	stmt ast.Stmt
}

// capturedOnly is the maker when every variable e reads that is not
// load-time is a parameter of one function outside the literal holding the
// call, never assigned nor written into anywhere: e is then the same on
// each of the literal's calls. Otherwise why not, in words, and perCall
// when a part of e is made on each call (the request's own input).
func (a *analysis) capturedOnly(e ast.Expr) (m *maker, why string, perCall bool) {
	info := a.pkg.TypesInfo
	var fn ast.Node
	var params []*types.Var // the maker's, that e reads
	madePerCall := func(x ast.Expr) bool {
		if no := a.stable(x); no != nil && !no.captured {
			why, perCall = no.why, true
		}
		return perCall
	}
	ast.Inspect(e, func(n ast.Node) bool {
		x, ok := n.(ast.Expr)
		if !ok || why != "" {
			return why == ""
		}
		if _, no := a.loadTime(x, false); no == nil {
			return false
		}
		switch y := x.(type) {
		case *ast.FuncLit:
			why = "it holds a function literal"
		case *ast.CallExpr:
			if tv, ok := info.Types[y.Fun]; ok && tv.IsType() {
				return true // a conversion
			}
			if !madePerCall(y) {
				why = "`" + a.text(y) + "` is a call on the literal's values, which --verify does not move"
			}
		case *ast.Ident:
			v, ok := info.Uses[y].(*types.Var)
			if !ok || v.IsField() {
				return false
			}
			f := a.paramFunc(v)
			switch {
			case f == nil:
				if !madePerCall(y) {
					why = "`" + y.Name + "` is not a parameter of the function that makes the literal"
				}
			case len(a.writes[v]) > 0 || len(a.into[v]) > 0:
				why = "`" + y.Name + "` is written at " + a.where(append(a.writes[v], a.into[v]...)[0])
			case fn != nil && fn != f:
				why = "it reads the parameters of two functions"
			}
			fn = f
			if f != nil {
				params = append(params, v)
			}
		}
		return why == ""
	})
	if why != "" {
		return nil, why, perCall
	}
	if fn == nil {
		return nil, "it reads no parameter of a function outside the literal", false
	}
	if why := a.givenWritten(fn, params); why != "" {
		return nil, why, false
	}
	stmt := a.makingStmt(fn)
	if stmt == nil {
		return nil, "the literal is not made by a statement of its own in " + funcName(fn), false
	}
	return &maker{fn: fn, stmt: stmt}, "", false
}

// givenWritten says why a maker's parameter is not the same for a literal's
// life though the maker never writes it: a call of the maker gives it a
// package-level variable (or what one holds) that the package writes
// after load time; a slice, map or pointer shares what the writer changes.
func (a *analysis) givenWritten(fn ast.Node, params []*types.Var) string {
	fd, ok := fn.(*ast.FuncDecl)
	if !ok {
		return ""
	}
	info := a.pkg.TypesInfo
	maker := info.Defs[fd.Name]
	at := map[*types.Var]int{} // a parameter's place among the arguments
	i := 0
	for _, field := range fd.Type.Params.List {
		for _, name := range field.Names {
			if v, ok := info.Defs[name].(*types.Var); ok {
				at[v] = i
			}
			i++
		}
		if len(field.Names) == 0 {
			i++
		}
	}
	why := ""
	for _, f := range a.pkg.Syntax {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || why != "" {
				return why == ""
			}
			id, ok := ast.Unparen(call.Fun).(*ast.Ident)
			if !ok || info.Uses[id] != maker {
				return true
			}
			for _, v := range params {
				j, ok := at[v]
				if !ok || j >= len(call.Args) {
					continue
				}
				base := baseIdent(call.Args[j])
				if base == nil {
					continue
				}
				g, ok := info.Uses[base].(*types.Var)
				if ok && g.Parent() == a.pkg.Types.Scope() && len(a.writes[g]) > 0 {
					why = fmt.Sprintf("`%s`, given as `%s` at %s, is written at %s", base.Name, v.Name(), a.where(call.Pos()),
						a.where(a.writes[g][0]))
				}
			}
			return why == ""
		})
	}
	return why
}

// paramFunc is the function outside a literal holding the call whose
// parameter v is; nil if v is no such parameter. A maker's receiver is
// left out: the server's value, whose fields other methods set, is the
// held value a memo keys by (memo-by-held-value).
func (a *analysis) paramFunc(v *types.Var) ast.Node {
	literal := false
	for _, n := range a.path {
		var fields []*ast.FieldList
		switch f := n.(type) {
		case *ast.FuncDecl:
			fields = []*ast.FieldList{f.Type.Params}
		case *ast.FuncLit:
			fields = []*ast.FieldList{f.Type.Params}
		default:
			continue
		}
		for _, fl := range fields {
			if fl != nil && fl.Pos() <= v.Pos() && v.Pos() < fl.End() {
				if literal {
					return n
				}
				return nil
			}
		}
		_, isLit := n.(*ast.FuncLit)
		literal = literal || isLit
	}
	return nil
}

// makingStmt is the innermost statement of fn's own body (outside any
// literal) that holds the call's outermost literal inside fn and stands
// directly in a block: the variant's line goes just before it.
func (a *analysis) makingStmt(fn ast.Node) ast.Stmt {
	at := -1
	for i, n := range a.path {
		if n == fn {
			break
		}
		if _, isLit := n.(*ast.FuncLit); isLit {
			at = i
		}
	}
	if at < 0 {
		return nil
	}
	for i := at + 1; i+1 < len(a.path) && a.path[i] != fn; i++ {
		stmt, ok := a.path[i].(ast.Stmt)
		if !ok {
			continue
		}
		switch a.path[i+1].(type) {
		case *ast.BlockStmt, *ast.CaseClause, *ast.CommClause:
			return stmt
		}
	}
	return nil
}

func funcName(fn ast.Node) string {
	if fd, ok := fn.(*ast.FuncDecl); ok {
		return fd.Name.Name
	}
	return "a function literal"
}

// makerSite checks that the call can be replaced by the names its results
// are held in: the only value of an assignment, a declaration or a return
// when it has two results.
func (p *callPlan) makerSite() string {
	if len(p.results) == 1 {
		return ""
	}
	switch s := p.a.path[0].(type) {
	case *ast.AssignStmt:
		if len(s.Rhs) == 1 {
			return ""
		}
	case *ast.ValueSpec:
		if len(s.Values) == 1 {
			return ""
		}
	case *ast.ReturnStmt:
		if len(s.Results) == 1 {
			return ""
		}
	}
	return fmt.Sprintf("`%s`'s %d results are not the only value of an assignment or return", p.a.text(p.call), len(p.results))
}

// perLiteral is the plan done once per literal made, when nothing of the
// call's is the call's own input (a key) and its results can stand where
// it stood.
func (p *callPlan) perLiteral(ranged bool) (*callPlan, error) {
	switch {
	case len(p.keys) > 0 || ranged:
		return nil, &NotRewritable{Why: "`" + p.a.text(p.call) + "` reads both the literal's values and others " +
			"the server holds: --verify does one rewrite or the other, not both"}
	case p.makerSite() != "":
		return nil, &NotRewritable{Why: p.makerSite()}
	}
	p.form = OncePerLiteral
	return p, nil
}
