package fuzz

import (
	"math"
	"strconv"
	"strings"
)

// Minimisers make one value smaller while crashes still says yes: an
// integer by galloping and bisection, text by its numbers, its deepest
// bracket nesting and delta debugging over its tokens. They know nothing of
// targets or requests.

// bisectInt finds the integer of least magnitude, same sign, that still
// crashes, assuming that what crashes at n crashes at every larger depth.
func bisectInt(v string, crashes func(string) bool) string {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return v
	}
	if n == math.MinInt64 {
		// Its magnitude is no int64: start from the next one in.
		if !crashes(strconv.FormatInt(-math.MaxInt64, 10)) {
			return v
		}
		n = -math.MaxInt64
	}
	sign := int64(1)
	if n < 0 {
		sign, n = -1, -n
	}
	at := func(m int64) string { return strconv.FormatInt(sign*m, 10) }
	if n <= 1 || crashes(at(0)) {
		if n > 1 {
			return at(0)
		}
		return v
	}
	lo, hi := int64(0), n // lo does not crash, hi does
	// Gallop up by powers of ten first: a trial that does not crash is
	// cheap, one that does costs a restart, and found depths are often
	// far past the threshold (1e18 for one near 1e4).
	for p := int64(10); p < hi && p <= math.MaxInt64/10; p *= 10 {
		if crashes(at(p)) {
			hi = p
			break
		}
		lo = p
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if crashes(at(mid)) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return at(hi)
}

// shrinkNumbers bisects each integer literal inside a text.
func shrinkNumbers(s string, crashes func(string) bool) string {
	for i := 0; ; i++ {
		lits := intLiteral.FindAllStringIndex(s, -1)
		if i >= len(lits) {
			return s
		}
		l := lits[i]
		prefix, suffix := s[:l[0]], s[l[1]:]
		n := bisectInt(s[l[0]:l[1]], func(v string) bool { return crashes(prefix + v + suffix) })
		s = prefix + n + suffix
	}
}

// nestings are the bracket pairs whose depth shrinkNesting lowers.
var nestings = []struct{ open, close string }{{"[", "]"}, {"{a:", "}"}, {"(", ")"}, {"{", "}"}}

// shrinkNesting lowers the deepest nesting of one kind of bracket by
// bisection, opening and closing runs together: token deletion alone
// cannot, since taking one bracket away unbalances the text.
func shrinkNesting(s string, crashes func(string) bool) string {
	for _, n := range nestings {
		i, depth := longestRun(s, n.open)
		if depth < 2 {
			continue
		}
		rest := s[i+depth*len(n.open):]
		j, closing := longestRun(rest, n.close)
		if closing < depth {
			continue
		}
		before, middle, after := s[:i], rest[:j], rest[j+depth*len(n.close):]
		at := func(k int64) string {
			return before + strings.Repeat(n.open, int(k)) + middle + strings.Repeat(n.close, int(k)) + after
		}
		k := bisectInt(strconv.Itoa(depth), func(v string) bool {
			k, _ := strconv.ParseInt(v, 10, 64)
			return crashes(at(k))
		})
		kn, _ := strconv.ParseInt(k, 10, 64)
		s = at(kn)
	}
	return s
}

// longestRun finds the longest run of unit repeated in s: where it
// starts and how many times.
func longestRun(s, unit string) (start, count int) {
	for i := 0; i < len(s); {
		if !strings.HasPrefix(s[i:], unit) {
			i++
			continue
		}
		n := 0
		for strings.HasPrefix(s[i+n*len(unit):], unit) {
			n++
		}
		if n > count {
			start, count = i, n
		}
		i += n * len(unit)
	}
	return start, count
}

// ddminTokens is Zeller's delta debugging over tokens: remove chunks while
// the crash stays, halving the chunk size down to single tokens.
func ddminTokens(s string, crashes func(string) bool, expired func() bool) string {
	toks := Tokens(s)
	n := 2
	for len(toks) >= 2 && !expired() {
		chunk := (len(toks) + n - 1) / n
		removed := false
		for start := 0; start < len(toks) && !expired(); start += chunk {
			end := min(start+chunk, len(toks))
			cand := append(append([]string{}, toks[:start]...), toks[end:]...)
			if len(cand) > 0 && crashes(strings.Join(cand, "")) {
				toks = cand
				n = max(n-1, 2)
				removed = true
				break
			}
		}
		if !removed {
			if chunk == 1 {
				break
			}
			n = min(n*2, len(toks))
		}
	}
	return strings.Join(toks, "")
}

// shrinkPrefix finds the shortest prefix of s that still crashes, by
// bisection of its length: a value too long for a buffer has a threshold
// as a depth does (and a run of one character is a single token to
// delta debugging).
func shrinkPrefix(s string, crashes func(string) bool) string {
	if len(s) < 2 {
		return s
	}
	k := bisectInt(strconv.Itoa(len(s)), func(v string) bool {
		n, _ := strconv.Atoi(v)
		return crashes(s[:n])
	})
	n, _ := strconv.Atoi(k)
	return s[:n]
}
