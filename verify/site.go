// Package verify is the source side of probe's --verify: it finds the call
// behind a finding's hot site in the target's own source, rewrites it so that
// its work is done once (load-time) or once per distinct input (cacheable),
// and builds the variant with `go build -overlay`, so that the user's tree is
// never written.
package verify

import (
	"go/types"
	"strings"
)

// Frame is one of the target's own frames in a profile's stack, as a pprof
// Location's Line gives it: Function.Name, Function.Filename and Line.
type Frame struct {
	Func string // as pprof names it: main.handler, main.(*server).rules, main.handler.func1
	File string // the path the binary was built from (or a -trimpath one)
	Line int
}

// Site is where a finding's expensive library function is called from.
type Site struct {
	// Callee is the library function the innermost frame calls, as pprof
	// names it (regexp.MustCompile, text/template.(*Template).Parse); empty
	// when the line holds one call only.
	Callee string
	// Frames are the target's own frames, innermost (Callee's caller)
	// first. Outer frames are tried when the call's input is a parameter of
	// its function: a helper compile(text) called with a constant.
	Frames []Frame
}

// Class is what a finding claims about its work.
type Class string

const (
	LoadTime  Class = "load-time" // the same for every request: compute it once
	Cacheable Class = "cacheable" // a function of its inputs: compute it once per input
)

// pprofKey is how pprof's name of a function reads after its last '/',
// generic brackets dropped: template.(*Template).Parse, main.compile.
func pprofKey(name string) string {
	// Brackets first, matched by depth: a shape's type arguments hold
	// brackets and slashes of their own (AddTool[go.shape.map[string]int]).
	var b strings.Builder
	depth := 0
	for _, r := range name {
		switch {
		case r == '[':
			depth++
		case r == ']' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	name = b.String()
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// funcKey is pprofKey's form of a function the type checker resolved.
func funcKey(fn *types.Func) string {
	pkg := ""
	if fn.Pkg() != nil {
		pkg = fn.Pkg().Name()
	}
	return funcKeyIn(fn, pkg)
}

// funcKeyByPath is funcKey with the package named as pprof names it, by
// its import path's last element, where that is not the package's name
// (github.com/google/go-jsonnet is package jsonnet).
func funcKeyByPath(fn *types.Func) string {
	pkg := ""
	if fn.Pkg() != nil {
		pkg = fn.Pkg().Path()
		if i := strings.LastIndex(pkg, "/"); i >= 0 {
			pkg = pkg[i+1:]
		}
	}
	return funcKeyIn(fn, pkg)
}

func funcKeyIn(fn *types.Func, pkg string) string {
	sig, _ := fn.Type().(*types.Signature)
	if sig == nil || sig.Recv() == nil {
		return pkg + "." + fn.Name()
	}
	recv := sig.Recv().Type()
	ptr := false
	if p, ok := recv.(*types.Pointer); ok {
		recv, ptr = p.Elem(), true
	}
	name := recv.String()
	if n, ok := recv.(*types.Named); ok {
		name = n.Obj().Name()
	}
	if ptr {
		return pkg + ".(*" + name + ")." + fn.Name()
	}
	return pkg + "." + name + "." + fn.Name()
}

// declName is the function declaration a pprof name belongs to: closures
// (main.handler.func1, main.handler.gowrap2) belong to their enclosing one.
func declName(name string) string {
	key := pprofKey(name)
	parts := strings.Split(key, ".")
	for len(parts) > 2 && isClosureSuffix(parts[len(parts)-1]) {
		parts = parts[:len(parts)-1]
	}
	return parts[len(parts)-1]
}

func isClosureSuffix(s string) bool {
	if s != "" && strings.Trim(s, "0123456789") == "" {
		return true // main.handler.func1.2: a closure inside a closure
	}
	for _, p := range []string{"func", "gowrap", "deferwrap"} {
		if rest, ok := strings.CutPrefix(s, p); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
			return true
		}
	}
	return false
}
