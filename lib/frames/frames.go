// Package frames says what one frame of a Go stack is: the package its
// function belongs to, whether that is the target's own code, the standard
// library, the runtime or a third-party module, and a short name to show.
// It is a leaf: the analyzers name work by it and the flame graphs colour
// by it, and neither imports the other.
package frames

import (
	"regexp"
	"strings"

	"github.com/google/pprof/profile"
	"golang.org/x/mod/module"
)

// Kinds of code.
const (
	Own        = "own"         // the target's own packages
	Std        = "std"         // the standard library
	Runtime    = "runtime"     // runtime and internal/runtime
	ThirdParty = "third-party" // a module with a domain in its path
)

// PkgPath is the import path of a function name such as
// "github.com/probehq/probe/fixtures/site.(*snapshot).walkFeeds" or "compress/flate.NewWriter".
func PkgPath(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot < 0 {
		return fn
	}
	return fn[:slash+1+dot]
}

// Module is the module a function's package most likely belongs to: the
// first three elements of a path on a code host (github.com/owner/repo),
// the first two of another domain's (modernc.org/sqlite), the package of
// the standard library or of a dotless path.
func Module(fn string) string {
	parts := strings.Split(PkgPath(fn), "/")
	n := 2
	switch parts[0] {
	case "github.com", "gitlab.com", "bitbucket.org", "golang.org", "codeberg.org", "git.sr.ht":
		n = 3
	}
	if !strings.Contains(parts[0], ".") {
		return PkgPath(fn)
	}
	return strings.Join(parts[:min(n, len(parts))], "/")
}

// Code tells whose code a frame is. MainModule, when known, is the import
// path of the target's main module: its packages are the target's own code
// even when it was built out of the module cache (go install
// example.com/server@v1.2.3), where every file looks like a dependency's.
type Code struct{ MainModule string }

// Kind tells the target's own code from the standard library, the runtime
// and third-party modules. The standard library is known by its top-level
// directories (so -trimpath binaries, whose files read "reflect/value.go",
// and toolchains in the module cache are read right); a dependency by its
// file in the module cache (/pkg/mod/, a path@version) or a vendor folder,
// or by a domain in its path with no file to tell. Everything else — the
// main package, the main module, a module built from a checkout, a dotless
// module path — is the target's own.
func (c Code) Kind(fn, file string) string {
	pkg := PkgPath(fn)
	first, _, _ := strings.Cut(pkg, "/")
	dotted := strings.Contains(first, ".")
	switch {
	case pkg == "runtime" || strings.HasPrefix(pkg, "runtime/") || strings.HasPrefix(pkg, "internal/runtime/"):
		return Runtime
	case strings.HasPrefix(fn, "type:.") || strings.HasPrefix(fn, "type.."):
		// The compiler's equality and hash functions of a type (a map
		// key's hash, a struct's ==), which maps and interfaces call: no
		// one's code, whatever the type's package.
		return Runtime
	case strings.HasSuffix(file, ".s") && !strings.Contains(fn, "."):
		return Std // a toolchain assembly helper with no package in its name (indexbytebody)
	case foreign(fn, file):
		return ThirdParty
	case !dotted && stdRoots[first]:
		return Std
	case pkg == "main" || c.MainModule != "" && (pkg == c.MainModule || strings.HasPrefix(pkg, c.MainModule+"/")):
		return Own
	case fromModuleCache(file), dotted && file == "":
		return ThirdParty
	}
	return Own
}

// foreign says whether a frame is not Go code the server wrote: a C
// function (a cgo driver's engine, a system library: no package in its
// name, or a C source file) or a cgo trampoline (_Cfunc_, _cgo_, _cgoexp_
// stubs, generated into a build directory where they look like own code).
// The server's own frame is past them, where its Go code called the driver.
func foreign(fn, file string) bool {
	switch {
	case cgoStub.MatchString(fn), cClone.MatchString(fn):
		return true
	case cSource.MatchString(file):
		return true // sqlite3.c, a .h inline, a .cc
	}
	slash := strings.LastIndexByte(fn, '/')
	return !strings.Contains(fn[slash+1:], ".") // a Go name is always pkg.Name
}

var (
	cgoStub = regexp.MustCompile(`\.(_Cfunc_|_C2func_|_Cmacro_|_cgo_|_Cgo_|_cgoexp_)|^(_cgo_|x_cgo_|crosscall)`)
	cSource = regexp.MustCompile(`\.(c|h|cc|cpp|cxx|hpp|hh|m|mm)$`)
	cClone  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\.(cold|part\.[0-9]+|isra\.[0-9]+|constprop\.[0-9]+)`)
)

// Kind is Code{}.Kind: the main module not known.
func Kind(fn, file string) string { return Code{}.Kind(fn, file) }

var moduleVersion = regexp.MustCompile(`@v[0-9]`)

func fromModuleCache(file string) bool {
	return strings.Contains(file, "/pkg/mod/") || strings.Contains(file, "/vendor/") || moduleVersion.MatchString(file)
}

// MainModule finds the module of main.main in the profiles (a goroutine
// profile holds it: the main goroutine waits in it) when that module came
// from the module cache; "" when it did not, or main.main is not there.
func MainModule(ps ...*profile.Profile) string {
	for _, p := range ps {
		if p == nil {
			continue
		}
		for _, f := range p.Function {
			if f.Name != "main.main" {
				continue
			}
			file := f.Filename
			if i := strings.Index(file, "/pkg/mod/"); i >= 0 {
				file = file[i+len("/pkg/mod/"):]
			} else if !moduleVersion.MatchString(file) {
				return ""
			}
			at := strings.Index(file, "@")
			if at < 0 {
				return ""
			}
			if path, err := module.UnescapePath(file[:at]); err == nil {
				return path
			}
			return file[:at]
		}
	}
	return ""
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
