package result

import (
	"strconv"
	"strings"
)

// MaxReasons is how many distinct error reasons a tally keeps for one
// operation; the others are counted together under OtherReasons, so the
// count of errors stays exact while a server that puts a request id in
// every error message grows neither probe's memory nor its report.
const MaxReasons = 100

// OtherReasons is the key that counts op's errors past its MaxReasons
// distinct reasons ("" : the reasons of no operation).
func OtherReasons(op string) string {
	return ReasonKey(op, "other reasons (past the first "+strconv.Itoa(MaxReasons)+" distinct)")
}

// ReasonKey is a tally's key: "op: text", or text for a reason of no
// operation (a refused connection, a timeout).
func ReasonKey(op, text string) string {
	if op == "" {
		return text
	}
	return op + ": " + text
}

// CapReasons is a tally made of m with at most MaxReasons distinct
// reasons an operation, the operation a key's longest "op: " prefix among
// ops (else none): its most frequent kept, the rest, and any
// OtherReasons already there, summed under OtherReasons(op). For tallies
// from elsewhere (a shard's report.json); m itself is not changed, and
// returned when it needs no cap.
func CapReasons(m map[string]int64, ops []string) map[string]int64 {
	if len(m) <= MaxReasons {
		return m
	}
	byOp := map[string][]string{}
	for k := range m {
		op := ""
		for _, o := range ops {
			if len(o) > len(op) && strings.HasPrefix(k, o+": ") {
				op = o
			}
		}
		byOp[op] = append(byOp[op], k)
	}
	out := make(map[string]int64, len(m))
	for op, keys := range byOp {
		sub := make(map[string]int64, len(keys))
		for _, k := range keys {
			sub[k] = m[k]
		}
		other := OtherReasons(op)
		kept := 0
		for _, k := range ByCount(sub) {
			if k != other && kept < MaxReasons {
				out[k] += sub[k]
				kept++
			} else {
				out[other] += sub[k]
			}
		}
	}
	return out
}
