// Package frames says what one frame of a Go stack is: the package its
// function belongs to, whether that is the target's own code, the standard
// library, the runtime or a third-party module, and a short name to show.
// It is a leaf: the analyzers name work by it and the flame graphs colour
// by it, and neither imports the other.
package frames

import "strings"

// Kinds of code.
const (
	Own        = "own"         // the target's own packages
	Std        = "std"         // the standard library
	Runtime    = "runtime"     // runtime and internal/runtime
	ThirdParty = "third-party" // a module with a domain in its path
)

// PkgPath is the import path of a function name such as
// "probe/fixtures/site.(*snapshot).walkFeeds" or "compress/flate.NewWriter".
func PkgPath(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot < 0 {
		return fn
	}
	return fn[:slash+1+dot]
}

// Kind tells the target's own code from the standard library and
// third-party modules: by the first path element (a domain has a dot), and
// for dotless paths by the standard library's top-level directories. The
// file name decides only what the path cannot: a binary built with
// -trimpath names its files "reflect/value.go", with no GOROOT to see, a
// module without a dot in its path ("app/handlers") is the target's own,
// and so is code under a GOPATH-style /src/ folder.
func Kind(fn, file string) string {
	pkg := PkgPath(fn)
	first, _, _ := strings.Cut(pkg, "/")
	switch {
	case strings.Contains(first, "."):
		return ThirdParty
	case pkg == "runtime" || strings.HasPrefix(pkg, "runtime/") || strings.HasPrefix(pkg, "internal/runtime/"):
		return Runtime
	case stdRoots[first]: // also when the toolchain lives in the module cache (GOTOOLCHAIN)
		return Std
	case strings.Contains(file, "/pkg/mod/"): // a dotless module path from the module cache
		return ThirdParty
	}
	return Own
}

// stdRoots are the first elements of the standard library's import paths
// (go list std | cut -d/ -f1).
var stdRoots = map[string]bool{}

func init() {
	for _, r := range strings.Fields(`archive bufio bytes cmp compress container context crypto database debug embed
		encoding errors expvar flag fmt go hash html image index internal io iter log maps math mime net os path
		plugin reflect regexp runtime slices sort strconv strings structs sync syscall testing text time unicode
		unique unsafe vendor weak`) {
		stdRoots[r] = true
	}
}

// DisplayName elides the type arguments of generic functions, which Go
// writes out whole (go.shape.struct { … } can run to hundreds of bytes).
func DisplayName(fn string) string {
	if !strings.Contains(fn, "[") {
		return fn
	}
	var b strings.Builder
	depth := 0
	for _, r := range fn {
		switch {
		case r == '[':
			if depth == 0 {
				b.WriteString("[…]")
			}
			depth++
		case r == ']':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}
