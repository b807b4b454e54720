package verify

import (
	"go/ast"
	"go/token"
	"go/types"
)

// A memo keyed by a held pointer assumes new data comes at a new address.
// A function that writes a field of a value through a pointer it did not
// make (add(c *Catalog, …) { c.Items = append(c.Items, …) }) puts new data
// at the old address: the memo would keep serving the old.

// pointeeWritten says where the package writes a field of a value that a
// pointer in t (t itself, or a field of a struct t) points at, through a
// pointer or value the writing function did not make; empty if nowhere.
func (a *analysis) pointeeWritten(t types.Type) string {
	targets := map[types.Type]bool{}
	addPointee := func(t types.Type) {
		if p, ok := t.Underlying().(*types.Pointer); ok {
			targets[types.Unalias(p.Elem())] = true
		}
	}
	addPointee(t)
	if s, ok := t.Underlying().(*types.Struct); ok {
		for f := range s.Fields() {
			addPointee(f.Type())
		}
	}
	if len(targets) == 0 {
		return ""
	}
	var at token.Pos
	var what string
	for _, f := range a.pkg.Syntax {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || (fd.Recv == nil && fd.Name.Name == "init") {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if at.IsValid() {
					return false
				}
				lhs, _ := writeTargets(n)
				for _, e := range lhs {
					if e == nil {
						continue
					}
					if field := a.fieldOf(e, targets); field != "" && !a.madeIn(fd.Body, baseIdent(e)) {
						at, what = e.Pos(), field
					}
				}
				return true
			})
		}
	}
	if !at.IsValid() {
		return ""
	}
	return "`" + what + "` is written at " + a.where(at)
}

// fieldOf is the text of the field selection in e's chain (x.f, x.f[i],
// x.f.g) on a value of one of the types, if any.
func (a *analysis) fieldOf(e ast.Expr, targets map[types.Type]bool) string {
	for _, x := range chain(e) {
		t, ok := x.(*ast.SelectorExpr)
		if !ok {
			continue
		}
		if s := a.pkg.TypesInfo.Selections[t]; s != nil && s.Kind() == types.FieldVal {
			recv := s.Recv()
			if p, ok := recv.Underlying().(*types.Pointer); ok {
				recv = p.Elem()
			}
			if targets[types.Unalias(recv)] {
				return a.text(t)
			}
		}
	}
	return ""
}

// madeIn reports whether id is a local of body made there from a literal
// or new (c := &Catalog{}, var c Catalog): filling in what it made is no
// write into a value the server holds.
func (a *analysis) madeIn(body *ast.BlockStmt, id *ast.Ident) bool {
	if id == nil {
		return false
	}
	v, ok := a.pkg.TypesInfo.Uses[id].(*types.Var)
	if !ok || v.Pos() < body.Pos() || v.Pos() >= body.End() {
		return false // a parameter, a receiver, a package variable
	}
	made := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if lid, ok := l.(*ast.Ident); ok && a.pkg.TypesInfo.Defs[lid] == v && i < len(n.Rhs) && len(n.Lhs) == len(n.Rhs) {
					made = fresh(n.Rhs[i])
				}
			}
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if a.pkg.TypesInfo.Defs[name] == v {
					made = len(n.Values) == 0 || (i < len(n.Values) && fresh(n.Values[i]))
				}
			}
		}
		return true
	})
	return made
}

// fresh reports whether e makes a new value: a composite literal, its
// address, or new(T).
func fresh(e ast.Expr) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.CompositeLit:
		return true
	case *ast.UnaryExpr:
		_, lit := ast.Unparen(e.X).(*ast.CompositeLit)
		return e.Op == token.AND && lit
	case *ast.CallExpr:
		id, ok := ast.Unparen(e.Fun).(*ast.Ident)
		return ok && id.Name == "new"
	}
	return false
}
