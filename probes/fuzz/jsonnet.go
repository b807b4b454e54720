package fuzz

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/go-jsonnet"
)

// Jsonnet inputs are built from the language's productions (locals,
// recursive functions, calls, comprehensions, std calls) rather than from
// bytes, so that what they exercise is the server's evaluator, not its
// parser: a byte-level mutant of a Jsonnet program is almost always a syntax
// error. Each seed is a program of one crash-prone shape with its sizes as
// %d verbs; the sizes come from the boundary set.

// Seed is one program shape of the corpus.
type Seed struct {
	Name   string
	Format string // fmt format; each %d is a depth or a size
}

// JsonnetCorpus is the built-in corpus: every way known to kill a Go
// Jsonnet evaluator, and a few that only look like it.
var JsonnetCorpus = []Seed{
	{"plain-recursion", `local f(n) = if n <= 0 then 0 else 1 + f(n - 1); f(%d)`},
	{"tailstrict-recursion", `local f(n, acc) = if n <= 0 then acc else f(n - 1, acc + 1) tailstrict; f(%d, 0)`},
	{"mutual-recursion", `local even(n) = if n <= 0 then true else odd(n - 1) tailstrict, odd(n) = if n <= 0 then false else ` +
		`even(n - 1) tailstrict; even(%d)`},
	{"foldl-sum", `std.foldl(function(acc, x) acc + x, std.range(1, %d), 0)`},
	{"foldl-nest", `std.length(std.manifestJson(std.foldl(function(acc, x) [acc], std.range(1, %d), [])))`},
	{"deep-array", "\x00array:%d"},
	{"deep-object", "\x00object:%d"},
	{"huge-array", `std.length(std.makeArray(%d, function(i) i))`},
	{"huge-string", `std.length(std.join('', std.makeArray(%d, function(i) 'xxxxxxxxxxxxxxxx')))`},
	{"string-doubling", `local s(k) = if k <= 0 then 'x' else local t = s(k - 1); t + t; std.length(s(%d))`},
	{"format-width", `std.length(std.format('%%%dd', 1))`},
	{"self-reference", `local o = { a: self.b, b: self.a }; o.a`},
	{"object-comprehension", `std.length({ ['k' + i]: i for i in std.range(1, %d) })`},
	{"array-index", `std.range(0, 10)[%d]`},
}

// maxLiteralDepth bounds nested literals: past it the body is bigger than
// a server would read, and the point (a deep parse) is made long before.
const maxLiteralDepth = 200000

// render writes a seed with sizes.
func (s Seed) render(sizes []int64) string {
	if rest, ok := strings.CutPrefix(s.Format, "\x00"); ok {
		kind, _, _ := strings.Cut(rest, ":")
		d := int(min(max(sizes[0], 0), maxLiteralDepth))
		if kind == "array" {
			return strings.Repeat("[", d) + "1" + strings.Repeat("]", d)
		}
		return strings.Repeat("{a:", d) + "1" + strings.Repeat("}", d)
	}
	args := make([]any, len(sizes))
	for i, v := range sizes {
		args[i] = v
	}
	return fmt.Sprintf(s.Format, args...)
}

func (s Seed) holes() int {
	if strings.HasPrefix(s.Format, "\x00") {
		return 1
	}
	return strings.Count(s.Format, "%d")
}

// JsonnetGen generates and mutates Jsonnet programs.
type JsonnetGen struct {
	Corpus []Seed
	r      *rand.Rand
}

// NewJsonnetGen draws from corpus (JsonnetCorpus when empty).
func NewJsonnetGen(r *rand.Rand, corpus []Seed) *JsonnetGen {
	if len(corpus) == 0 {
		corpus = JsonnetCorpus
	}
	return &JsonnetGen{Corpus: corpus, r: r}
}

// depthSizes are the sizes seeds are tried with: small ones that work,
// the powers of ten and two where recursion and allocation break, and
// past 1e9.
var depthSizes = func() []int64 {
	out := []int64{0, 1, 2, 10, 100, 500, 1000}
	for p := int64(10000); p <= 1e12; p *= 10 {
		out = append(out, p, 3*p)
	}
	for k := 10; k <= 40; k += 5 {
		out = append(out, int64(1)<<k)
	}
	return out
}()

func (g *JsonnetGen) size() int64 {
	v := depthSizes[g.r.IntN(len(depthSizes))]
	if g.r.IntN(3) == 0 {
		v += int64(g.r.IntN(3)) - 1
	}
	return v
}

// Program is a fresh program: a corpus seed with boundary sizes, sometimes
// wrapped or combined with another.
func (g *JsonnetGen) Program() string {
	s := g.Corpus[g.r.IntN(len(g.Corpus))]
	sizes := make([]int64, s.holes())
	for i := range sizes {
		sizes[i] = g.size()
	}
	p := s.render(sizes)
	if g.r.IntN(4) == 0 {
		p = g.wrap(p)
	}
	return p
}

// wrap puts a program inside another production; the result still parses.
func (g *JsonnetGen) wrap(p string) string {
	switch g.r.IntN(6) {
	case 0:
		return "[" + p + "]"
	case 1:
		return "{ result: " + p + " }"
	case 2:
		return "local x = " + p + "; [x, x]"
	case 3:
		return "std.manifestJson(" + p + ")"
	case 4:
		return "[" + p + ", " + g.Program() + "]"
	default:
		return "std.length(std.toString(" + p + "))"
	}
}

var intLiteral = regexp.MustCompile(`\b\d+\b`)

// Mutate changes one thing about a program: a size, a tailstrict, a
// wrapping, or (rarely) a token, which makes a syntax error on purpose.
func (g *JsonnetGen) Mutate(p string) string {
	switch g.r.IntN(8) {
	case 0, 1, 2:
		lits := intLiteral.FindAllStringIndex(p, -1)
		if len(lits) == 0 {
			return g.Program()
		}
		l := lits[g.r.IntN(len(lits))]
		v, _ := strconv.ParseInt(p[l[0]:l[1]], 10, 64)
		switch g.r.IntN(3) {
		case 0:
			v = g.size()
		case 1:
			v *= 10
		default:
			v /= 2
		}
		return p[:l[0]] + strconv.FormatInt(v, 10) + p[l[1]:]
	case 3:
		if strings.Contains(p, " tailstrict") {
			return strings.Replace(p, " tailstrict", "", 1)
		}
		return g.Program()
	case 4, 5:
		return g.wrap(p)
	case 6:
		return "[" + p + ", " + g.Program() + "]"
	default:
		toks := Tokens(p)
		if len(toks) < 2 {
			return g.Program()
		}
		i := g.r.IntN(len(toks))
		return strings.Join(append(toks[:i:i], toks[i+1:]...), "")
	}
}

// Parses reports whether src is syntactically valid Jsonnet; shrinking
// skips candidates that are not, since they cannot crash an evaluator.
func Parses(src string) bool {
	if nesting(src) > maxParseNesting {
		// go-jsonnet's parser recurses per level: past this depth the check
		// would overflow probe's own stack. The server decides instead.
		return true
	}
	_, err := jsonnet.SnippetToAST("input.jsonnet", src)
	return err == nil
}

// maxParseNesting is the deepest bracket nesting probe parses itself.
const maxParseNesting = 2000

// nesting is the deepest bracket nesting in s, strings not told apart:
// an upper bound is all that is needed.
func nesting(s string) int {
	d, deepest := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[', '{', '(':
			d++
			deepest = max(deepest, d)
		case ']', '}', ')':
			d--
		}
	}
	return deepest
}

var token = regexp.MustCompile(`\s+|[A-Za-z_][A-Za-z0-9_]*|\d+(\.\d+)?|'(\\.|[^'\\])*'|"(\\.|[^"\\])*"|.`)

// Tokens splits text into Jsonnet-ish lexical units (identifiers, numbers,
// strings, single characters, whitespace), whose concatenation is the text.
func Tokens(s string) []string {
	return token.FindAllString(s, -1)
}
