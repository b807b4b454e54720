package fuzz

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
)

// Boundary values by type: where servers that parse a parameter into a
// depth, a size or a count break. Depths and sizes past 1e9 matter: seed
// 002's recursion died at a depth nobody tried by hand.

// BoundaryInts are signed integers, as text.
func BoundaryInts() []string {
	seen := map[string]bool{}
	var out []string
	add := func(v int64) {
		s := strconv.FormatInt(v, 10)
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, v := range []int64{0, 1, -1, 2, 7, 8, 9, 10, 100, 255, 256, 1000} {
		add(v)
	}
	for k := 4; k < 63; k++ {
		p := int64(1) << k
		add(p - 1)
		add(p)
		add(p + 1)
		add(-p)
	}
	for p := int64(100); p <= 1e18; p *= 10 {
		add(p)
		add(p + 1)
		add(-p)
		add(3 * p)
	}
	add(math.MaxInt64)
	add(math.MinInt64)
	add(math.MaxInt32)
	add(math.MinInt32)
	return out
}

// BoundaryUints are non-negative integers, as text, including ones past
// int64's range.
func BoundaryUints() []string {
	var out []string
	for _, s := range BoundaryInts() {
		if !strings.HasPrefix(s, "-") {
			out = append(out, s)
		}
	}
	return append(out, "9223372036854775808", strconv.FormatUint(math.MaxUint64, 10))
}

// BoundaryStrings are strings that break parsers, buffers and printers.
func BoundaryStrings() []string {
	return []string{
		"", "a", " ", "0", "-1", "null", "NaN", "true", "\"", "'", "\\", "%", "%s%n%x", "{}", "[]",
		"../../../../etc/passwd", "a/../../b", "\x00", "a\x00b", "\r\n", "\t\v\f", "\x1b[31m", "\x7f",
		"é", "日本語", "\u202etxt.exe", "e\u0301\u0301\u0301", "😀", "\xff\xfe", "\xed\xa0\x80",
		strings.Repeat("A", 1000), strings.Repeat("A", 100000), strings.Repeat("😀", 10000),
		strings.Repeat("[", 10000), strings.Repeat("{", 10000), strings.Repeat("(", 10000),
		strings.Repeat("[", 5000) + strings.Repeat("]", 5000), strings.Repeat("a,", 50000),
		strings.Repeat("%", 10000), strings.Repeat("\\", 10000),
	}
}

// BoundaryJSON are JSON values: the types a handler does not expect, deep
// nesting and large sizes.
func BoundaryJSON() []string {
	return []string{
		"null", "true", "false", "0", "-1", "1e308", "-1e308", "1e-400", "9223372036854775808",
		`""`, `"x"`, "[]", "{}", `{"a":null}`, `[null]`, `{"":""}`,
		strings.Repeat("[", 1000) + strings.Repeat("]", 1000),
		strings.Repeat("[", 100000) + strings.Repeat("]", 100000),
		strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
		"[" + strings.Repeat("0,", 100000) + "0]",
		`"` + strings.Repeat("x", 1<<20) + `"`,
		`{"depth": 1000000000, "limit": -1, "n": 9223372036854775807}`,
	}
}

// The boundary sets, built once when a fuzz run first draws from them
// (not at start-up: every probe process, fixture children and query
// workers included, links this package, and the strings are a megabyte).
var (
	boundaryInts    = sync.OnceValue(BoundaryInts)
	boundaryUints   = sync.OnceValue(BoundaryUints)
	boundaryStrings = sync.OnceValue(BoundaryStrings)
	boundaryJSON    = sync.OnceValue(BoundaryJSON)
)

// randomInt draws an integer near a boundary: a boundary value, a neighbour
// of one, or a uniform one of a random magnitude.
func randomInt(r *rand.Rand) string {
	b := boundaryInts()
	switch r.IntN(4) {
	case 0, 1:
		return b[r.IntN(len(b))]
	case 2:
		v, _ := strconv.ParseInt(b[r.IntN(len(b))], 10, 64)
		return strconv.FormatInt(v+int64(r.IntN(5))-2, 10)
	default:
		return strconv.FormatInt(r.Int64N(int64(1)<<r.IntN(62)+1), 10)
	}
}

// hugeValue bounds the huge string of a hole in the request line or a
// header: past it a server answers 414 or 431 before any handler runs.
// Body holes take up to maxValue.
const hugeValue = 64 << 10

// Extremes are a hole's extreme values, in the order the search tries
// them before any random one: the numbers at and one past the ends of
// int64 (and int32, uint64), 0 and -1; the empty and the huge string,
// digit strings that overflow, the deepest bracket nesting and Unicode's
// edge cases; the deepest and largest JSON; the methods that are not the
// usual ones and the longest token; the corpus's Jsonnet at its greatest
// depths. Each list is cut to what its place can carry.
func Extremes(k Kind, p Place) []string {
	huge := valueLimit(p)
	switch k {
	case Int:
		return extremeInts()
	case Uint:
		var out []string
		for _, s := range extremeInts() {
			if !strings.HasPrefix(s, "-") {
				out = append(out, s)
			}
		}
		return out
	case Str:
		return []string{
			"", strings.Repeat("A", huge), "-1", "0", "9223372036854775808", "-9223372036854775809",
			strings.Repeat("9", 400), strings.Repeat("[", 10000), strings.Repeat("{", 10000),
			strings.Repeat("[", 5000) + strings.Repeat("]", 5000),
			"\u202etxt.exe", "\ufeff", "\U0010ffff", "\uffff", "e" + strings.Repeat("\u0301", 1000),
			strings.Repeat("😀", huge/4), "\xff\xfe", "\xed\xa0\x80", "\x00", "%00", "../../../../etc/passwd",
			"%s%n%x", "'", "\"", "\\",
		}
	case JSON:
		return []string{
			strings.Repeat("[", 100000) + strings.Repeat("]", 100000),
			strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
			"9223372036854775808", "-9223372036854775809", "1e308", "-1e308", "1e-400", "0", "-1", "null",
			`""`, `"` + strings.Repeat("x", huge-2) + `"`, "[]", "{}", "[" + strings.Repeat("0,", 100000) + "0]",
		}
	case Method:
		return extremeMethods()
	case Jsonnet:
		var out []string
		for _, depth := range []int64{maxLiteralDepth, 1_000_000_000} {
			for _, s := range JsonnetCorpus {
				sizes := make([]int64, s.holes())
				for i := range sizes {
					sizes[i] = depth
				}
				out = append(out, s.render(sizes))
			}
		}
		return out
	}
	return nil
}

func extremeInts() []string {
	return []string{
		"0", "-1", "1", strconv.FormatInt(math.MaxInt64, 10), strconv.FormatInt(math.MinInt64, 10),
		"9223372036854775808", "-9223372036854775809", strconv.FormatInt(math.MaxInt32, 10),
		strconv.FormatInt(math.MinInt32, 10), "2147483648", "-2147483649", "4294967295", "4294967296",
		strconv.FormatUint(math.MaxUint64, 10), "18446744073709551616", "1000000000", "1000000000000000000",
		strings.Repeat("9", 400),
	}
}

// The methods a server does not expect first, then the usual ones.
func extremeMethods() []string {
	return []string{
		strings.Repeat("M", 1024), "CONNECT", "TRACE", "OPTIONS", "HEAD", "get", "G", "!#$%&'*+-.^_`|~",
		"PROPFIND", "M-SEARCH", "DELETE", "PATCH", "PUT", "POST", "GET",
	}
}

// boundaryValues are the pool a hole's random values come from.
func boundaryValues(k Kind, p Place) []string {
	switch k {
	case Int:
		return boundaryInts()
	case Uint:
		return boundaryUints()
	case Str:
		return boundaryStrings()
	case JSON:
		return boundaryJSON()
	case Method:
		return append(extremeMethods(), "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", "BREW", "Get", "post",
			"QUERY", "SEARCH", "PRI", "0", "-", strings.Repeat("A", 64))
	}
	return nil
}

// tokenChars are the bytes of an HTTP token, for random methods.
const tokenChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~"
