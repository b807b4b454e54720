package verify

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/printer"
	"go/token"
	"go/types"
	"io"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/tools/go/ast/astutil"
)

// edit replaces the bytes [from, to) of a file.
type edit struct {
	from, to int
	text     string
}

// apply writes the file with the call replaced and the declarations that do
// its work once appended; imports are added and the whole is gofmt'ed.
func (p *callPlan) apply(f *ast.File, src []byte) ([]byte, error) {
	imports := fileImports(p.a, f)
	qual := func(pkg *types.Package) string {
		if pkg == p.a.pkg.Types {
			return ""
		}
		if name, ok := imports.names[pkg.Path()]; ok {
			return name
		}
		return imports.add(pkg.Path(), pkg.Name())
	}
	syncName := func() string { return qual(types.NewPackage("sync", "sync")) }
	n := p.freeNumber()

	// The call's text, keys replaced by the memo's inputs and constants
	// local to the function by their values (out of scope at package level).
	var inner []edit
	for i, k := range p.keys {
		inner = append(inner, edit{p.offset(k.Pos()), p.offset(k.End()), fmt.Sprintf("probeIn%d", i)})
	}
	for e, i := range p.also {
		inner = append(inner, edit{p.offset(e.Pos()), p.offset(e.End()), fmt.Sprintf("probeIn%d", i)})
	}
	if p.subst != nil {
		ast.Inspect(p.call, func(node ast.Node) bool {
			id, ok := node.(*ast.Ident)
			if !ok {
				return true
			}
			if rhs, ok := p.subst[p.a.pkg.TypesInfo.Uses[id]]; ok {
				inner = append(inner, edit{p.offset(id.Pos()), p.offset(id.End()), "(" + p.render(rhs, src) + ")"})
			}
			return true
		})
	}
	ast.Inspect(p.call, func(node ast.Node) bool {
		id, ok := node.(*ast.Ident)
		if !ok {
			return true
		}
		c, ok := p.a.pkg.TypesInfo.Uses[id].(*types.Const)
		if !ok || c.Parent() == p.a.pkg.Types.Scope() || c.Parent() == types.Universe || c.Pkg() != p.a.pkg.Types {
			return true
		}
		from := p.offset(id.Pos())
		for _, e := range inner {
			if e.from <= from && from < e.to {
				return true
			}
		}
		val := c.Val().ExactString()
		if b, basic := c.Type().(*types.Basic); !basic || b.Info()&types.IsUntyped == 0 {
			val = types.TypeString(c.Type(), qual) + "(" + val + ")"
		}
		inner = append(inner, edit{from, p.offset(id.End()), val})
		return true
	})
	callFrom, callTo := p.offset(p.call.Pos()), p.offset(p.call.End())
	in := inner[:0:0]
	for _, e := range inner {
		if callFrom <= e.from && e.to <= callTo { // keys made of a variable's value are outside the call
			in = append(in, e)
		}
	}
	callText := string(applyEdits(src[callFrom:callTo], in, callFrom))

	results := make([]string, len(p.results))
	for i, t := range p.results {
		results[i] = types.TypeString(t, qual)
	}
	var decl, site string
	comment := strings.Join(strings.Fields(p.a.text(p.call)), " ")
	switch p.form {
	case Once:
		name := fmt.Sprintf("probeOnce%d", n)
		once, sig := "OnceValue", results[0]
		if len(results) == 2 {
			once, sig = "OnceValues", "("+results[0]+", "+results[1]+")"
		}
		decl = fmt.Sprintf("\n// %s is `%s`,\n// done once instead of on every call (probe --verify's load-time variant).\n"+
			"var %s = %s.%s(func() %s { return %s })\n", name, comment, name, syncName(), once, sig, callText)
		site = name + "()"
	case OncePerLiteral:
		names := []string{fmt.Sprintf("probeMade%d", n)}
		if len(results) == 2 {
			names = append(names, fmt.Sprintf("probeMade%db", n))
		}
		site = strings.Join(names, ", ")
		at := p.offset(p.maker.stmt.Pos())
		made := fmt.Sprintf("// %s: `%s`,\n// done once per literal made instead of on each of its calls "+
			"(probe --verify's load-time variant).\n%s := %s\n", site, comment, site, callText)
		out := applyEdits(src, []edit{{callFrom, callTo, site}, {at, at, made}}, 0)
		return addImports(out, imports.missing)
	default:
		decl, site = p.memoDecl(n, syncName(), qual, results, callText, src, comment)
	}
	out := applyEdits(src, []edit{{callFrom, callTo, site}}, 0)
	out = append(out, decl...)
	return addImports(out, imports.missing)
}

// render is e's text with what the memo is keyed by as its inputs.
func (p *callPlan) render(e ast.Expr, src []byte) string {
	var edits []edit
	for x, i := range p.keyUses(e) {
		edits = append(edits, edit{p.offset(x.Pos()), p.offset(x.End()), fmt.Sprintf("probeIn%d", i)})
	}
	from, to := p.offset(e.Pos()), p.offset(e.End())
	return string(applyEdits(src[from:to], edits, from))
}

// memoDecl is a memo of the call keyed by its inputs, and the call site.
func (p *callPlan) memoDecl(n int, syncName string, qual types.Qualifier, results []string, callText string,
	src []byte, comment string) (decl, site string) {
	name := fmt.Sprintf("probeMemo%d", n)
	var ins, inTypes, outs, fields, args []string
	for i, k := range p.keys {
		t := types.TypeString(types.Default(p.a.pkg.TypesInfo.TypeOf(k)), qual)
		ins = append(ins, fmt.Sprintf("probeIn%d %s", i, t))
		inTypes = append(inTypes, fmt.Sprintf("probeIn%d %s", i, t))
		args = append(args, string(src[p.offset(k.Pos()):p.offset(k.End())]))
	}
	for i, r := range results {
		outs = append(outs, fmt.Sprintf("probeOut%d", i))
		fields = append(fields, fmt.Sprintf("probeOut%d %s", i, r))
	}
	keyType, key := strings.Fields(inTypes[0])[1], "probeIn0"
	if len(p.keys) > 1 {
		var names []string
		for i := range p.keys {
			names = append(names, fmt.Sprintf("probeIn%d", i))
		}
		keyType = "struct{ " + strings.Join(inTypes, "; ") + " }"
		key = keyType + "{" + strings.Join(names, ", ") + "}"
	}
	ret := strings.Join(results, ", ")
	if len(results) > 1 {
		ret = "(" + ret + ")"
	}
	got := make([]string, len(outs))
	for i, o := range outs {
		got[i] = "probeHit." + o
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n// %s keeps `%s`\n// per value of its inputs, at most %d of them (probe --verify's %s variant).\n",
		name, comment, memoBound, p.form)
	fmt.Fprintf(&b, "type %sEntry struct{ %s }\n\n", name, strings.Join(fields, "; "))
	fmt.Fprintf(&b, "var %s = struct {\n\t%s.Mutex\n\tm map[%s]%sEntry\n}{m: map[%s]%sEntry{}}\n\n",
		name, syncName, keyType, name, keyType, name)
	fmt.Fprintf(&b, "func %sGet(%s) %s {\n", name, strings.Join(ins, ", "), ret)
	fmt.Fprintf(&b, "\tprobeKey := %s\n\t%s.Lock()\n\tprobeHit, probeFound := %s.m[probeKey]\n\t%s.Unlock()\n",
		key, name, name, name)
	fmt.Fprintf(&b, "\tif probeFound {\n\t\treturn %s\n\t}\n", strings.Join(got, ", "))
	// Computed outside the lock: two misses on one input may both compute
	// (the call is pure), but a slow input never holds up the others.
	fmt.Fprintf(&b, "\t%s := %s\n\t%s.Lock()\n", strings.Join(outs, ", "), callText, name)
	fmt.Fprintf(&b, "\tif len(%s.m) >= %d {\n\t\tclear(%s.m)\n\t}\n", name, memoBound, name)
	fmt.Fprintf(&b, "\t%s.m[probeKey] = %sEntry{%s}\n\t%s.Unlock()\n\treturn %s\n}\n",
		name, name, strings.Join(outs, ", "), name, strings.Join(outs, ", "))
	return b.String(), name + "Get(" + strings.Join(args, ", ") + ")"
}

// freeNumber is the least n for which the package declares none of the
// names the variant adds.
func (p *callPlan) freeNumber() int {
	// The scope at the call: the package's and every local one around it
	// (a variant's names in the maker are locals the literal sees).
	scope := p.a.pkg.Types.Scope().Innermost(p.call.Pos())
	if scope == nil {
		scope = p.a.pkg.Types.Scope()
	}
	for n := 1; ; n++ {
		free := true
		for _, f := range []string{"probeOnce%d", "probeMemo%d", "probeMemo%dGet", "probeMemo%dEntry", "probeMade%d", "probeMade%db"} {
			name := fmt.Sprintf(f, n)
			if _, obj := scope.LookupParent(name, p.call.Pos()); obj != nil || importedAs(p.a.pkg.Types.Scope(), name) {
				free = false
			}
		}
		if free {
			return n
		}
	}
}

// importedAs reports whether a file of the package imports a package under
// name: a package-level name the variant adds would clash with it.
func importedAs(pkg *types.Scope, name string) bool {
	for i := range pkg.NumChildren() {
		if pkg.Child(i).Lookup(name) != nil {
			return true
		}
	}
	return false
}

// applyEdits applies non-overlapping edits to b, whose first byte is at
// offset base of the file.
func applyEdits(b []byte, edits []edit, base int) []byte {
	sort.Slice(edits, func(i, j int) bool { return edits[i].from < edits[j].from })
	var out []byte
	at := 0
	for _, e := range edits {
		from, to := e.from-base, e.to-base
		if from < at {
			continue // inside an edit already made
		}
		out = append(out, b[at:from]...)
		out = append(out, e.text...)
		at = to
	}
	return append(out, b[at:]...)
}

// importSet is a file's imports by path, and the ones the variant adds.
type importSet struct {
	names   map[string]string
	missing map[string]string // path → name
	taken   func(name string) bool
}

// add imports path under its package's name, or under another where the
// file or its package already uses that name (a func sync, an import named
// sync): the variant must build wherever the user's code did.
func (s *importSet) add(path, name string) string {
	local := name
	for i := 1; s.taken(local); i++ {
		local = "probe" + name
		if i > 1 {
			local += strconv.Itoa(i)
		}
	}
	s.names[path] = local
	s.missing[path] = local
	return local
}

func fileImports(a *analysis, f *ast.File) *importSet {
	s := &importSet{names: map[string]string{}, missing: map[string]string{}}
	s.taken = func(name string) bool {
		for _, used := range s.names {
			if used == name {
				return true
			}
		}
		return a.pkg.Types.Scope().Lookup(name) != nil
	}
	for _, spec := range f.Imports {
		path, _ := strconv.Unquote(spec.Path.Value)
		switch {
		case spec.Name != nil && (spec.Name.Name == "_" || spec.Name.Name == "."):
		case spec.Name != nil:
			s.names[path] = spec.Name.Name
		case a.pkg.Imports[path] != nil:
			s.names[path] = a.pkg.Imports[path].Name
		}
	}
	return s
}

// addImports adds the imports to a file's source and formats it.
func addImports(src []byte, missing map[string]string) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("verify: the variant does not parse: %v", err)
	}
	for path, name := range missing {
		if name == pathName(path) {
			astutil.AddImport(fset, f, path)
		} else {
			astutil.AddNamedImport(fset, f, name, path)
		}
	}
	var b bytes.Buffer
	if err := format.Node(&b, fset, f); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// pathName is the name an import of path gets unnamed: the last element
// (the standard library's and most modules' packages).
func pathName(path string) string {
	return path[strings.LastIndex(path, "/")+1:]
}

func formatNode(w io.Writer, fset *token.FileSet, n ast.Node) error {
	return (&printer.Config{Mode: printer.UseSpaces, Tabwidth: 8}).Fprint(w, fset, n)
}
