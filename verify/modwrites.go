package verify

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/tools/go/packages"
)

// A package-level variable of the module is written from other packages
// too: `cfg.Pattern = …` in main, for a `Pattern` the hot package reads.
// The type-checked package shows only its own writes; the module's other
// files are read as syntax (no go command) for writes to the variable by
// its qualified name.

// writtenElsewhere is where another package of the module writes v (a
// package-level variable of the module's), as "file:line"; empty if none
// is seen or v is not the module's.
func (a *analysis) writtenElsewhere(v *types.Var) string {
	if v.Pkg() == nil || !v.Exported() || v.Parent() != v.Pkg().Scope() {
		return ""
	}
	key := v.Pkg().Path() + "." + v.Name()
	if w, ok := a.elsewhere[key]; ok {
		return w
	}
	// The hot package's own files are type-checked: its writes are known.
	w := moduleWrites(a.pkg, v.Pkg().Path(), v.Name(), v.Pkg() == a.pkg.Types)
	if a.elsewhere == nil {
		a.elsewhere = map[string]string{}
	}
	a.elsewhere[key] = w
	return w
}

// moduleWrites reads the module holding pkg for a write to pkgPath.name
// from a package other than pkgPath: its first, as "file:line".
func moduleWrites(pkg *packages.Package, pkgPath, name string, skipOwn bool) string {
	if len(pkg.GoFiles) == 0 {
		return ""
	}
	root, err := moduleRoot(filepath.Dir(pkg.GoFiles[0]))
	if err != nil {
		return ""
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return ""
	}
	modPath := modfile.ModulePath(mod)
	if modPath == "" || (pkgPath != modPath && !strings.HasPrefix(pkgPath, modPath+"/")) {
		return "" // another module's: this one's source is all probe rewrites
	}
	pkgDir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(pkgPath, modPath), "/")))
	found := ""
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case found != "":
			return filepath.SkipAll
		case err != nil:
			return nil // unreadable: what it holds is not seen
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "vendor" ||
				d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if p != root {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // a module of its own
				}
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		own := filepath.Dir(p) == pkgDir
		if !own || !skipOwn {
			found = fileWrites(p, root, pkgPath, name, own)
		}
		return nil
	})
	return found
}

// fileWrites is the first write in the file at path to name of the package
// pkgPath, as "file:line" relative to root: by its bare name in a file of
// that package (own), else qualified by the name the file imports it as.
// Syntax alone: a local of the same name counts too, erring towards no
// claim.
func fileWrites(path, root, pkgPath, name string, own bool) string {
	fset := token.NewFileSet()
	head, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
	if err != nil {
		return ""
	}
	local := ""
	for _, imp := range head.Imports {
		if own {
			break
		}
		if p, _ := strconv.Unquote(imp.Path.Value); p == pkgPath {
			local = pkgPath[strings.LastIndex(pkgPath, "/")+1:]
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
	}
	if !own && (local == "" || local == "_" || local == ".") {
		return ""
	}
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		return ""
	}
	names := func(e ast.Expr) bool {
		for _, x := range chain(e) {
			switch t := x.(type) {
			case *ast.Ident:
				return own && t.Name == name
			case *ast.SelectorExpr:
				if id, ok := t.X.(*ast.Ident); ok && !own && id.Name == local && t.Sel.Name == name {
					return true
				}
			}
		}
		return false
	}
	var at token.Pos
	inspect := func(n ast.Node) bool {
		if at.IsValid() {
			return false
		}
		targets, _ := writeTargets(n)
		if call, ok := n.(*ast.CallExpr); ok {
			if id, ok := call.Fun.(*ast.Ident); ok && len(call.Args) > 0 &&
				(id.Name == "copy" || id.Name == "clear" || id.Name == "delete") {
				targets = call.Args[:1]
			}
		}
		for _, t := range targets {
			if t != nil && names(t) {
				at = t.Pos()
			}
		}
		return true
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "init" {
			continue // runs before any request
		}
		ast.Inspect(d, inspect)
	}
	if !at.IsValid() {
		return ""
	}
	rel, _ := filepath.Rel(root, path)
	return fmt.Sprintf("%s:%d", filepath.ToSlash(rel), fset.Position(at).Line)
}
