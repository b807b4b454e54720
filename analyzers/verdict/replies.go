package verdict

import (
	"fmt"
	"hash/fnv"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/result"
)

// Equal cost is not input independence (DESIGN.md, the experiment): work
// whose CPU per request stays put across inputs while another input gets
// another reply is a function of its input of constant cost (a per-user
// sort of equal-sized lists, a fixed-size hash of an id). Its result
// cannot be computed once for every request: at most it is memoised per
// input. So before the experiment claims load-time, the replies are read:
// the experiment's own variants' (same-key's against each input variant's)
// and the main run's (the busiest key's against the other keys of its
// operation). A reply that differs from another only where it quotes its
// request (a name, an id), or in nonces and timestamps, is no other
// answer.

// maxKeysCompared bounds the main run's keys compared with the busiest.
const maxKeysCompared = 8

// Kept is a reply kept of one request key: the request as an echo in
// the reply could quote it, whether it carried input (a query or a body),
// and its most frequent body.
type Kept struct {
	request string
	input   bool
	body    []byte
	grpc    bool // a gRPC call: its body is the message
}

// ReplyEvidence is what the replies say of the input.
type ReplyEvidence struct {
	// Answered: another input got another reply, in words ("": none seen).
	Answered string
	// Echoed: an input got another reply that differs only where it
	// quotes the request.
	Echoed bool
	// Inputs are the input header fields and JSON body members the base
	// request carried: a load-time claim needs each varied by a variant
	// with the same reply and the same work.
	Inputs []string
	// NoInput: the request carries none (a JSON body of no members, no
	// query, no input header): like a page, a resource of the server.
	NoInput bool
	// InFlight is the clients of the experiment's load: at most as many
	// requests are in flight when the variant changes (0: not known).
	InFlight int
}

// KeptOf is the kept reply of digest d (nil body: none kept).
func KeptOf(d result.Digest) Kept {
	k := Kept{request: d.Request, input: d.Input, grpc: d.GRPC}
	if len(d.Bodies) > 0 {
		k.body = d.Bodies[0]
	}
	return k
}

// masked is a reply with its volatile fragments (nonces, long ids,
// timestamps) masked, as StableDigest reads it.
func masked(b []byte) []byte { return volatile.ReplaceAll(b, []byte("\x00")) }

// anotherAnswer says whether b is another answer than a: their bytes
// differ, volatile fragments masked, beyond what echoes each one's request.
// Requests without a query or a body are resources of the site (pages,
// feeds), each its own reply by nature (the evidence model's rule): no
// input got another answer there.
func anotherAnswer(a, b Kept) bool {
	return (a.input || b.input) && !analyzers.EchoesOnly(masked(a.body), masked(b.body), a.request, b.request)
}

// stableKey says whether every reply kept of a key is one answer once its
// volatile fragments are masked: a key whose own replies vary (an order,
// a count) says nothing by differing from another key.
func stableKey(d result.Digest) bool {
	if len(d.Bodies) == 0 {
		return false
	}
	first := string(masked(d.Bodies[0]))
	for _, b := range d.Bodies[1:] {
		if string(masked(b)) != first {
			return false
		}
	}
	return true
}

// ReadInputReplies is what the replies of the run and of the experiment's
// variants say of the input. got holds each variant's kept reply in the
// order of vs (same-key first); base is the run's busiest key.
func ReadInputReplies(run *result.Run, base *result.Digest, vs []Variant, got []Kept) ReplyEvidence {
	var ev ReplyEvidence
	// The experiment's variants: an input variant (another key, or a
	// parameter the server reads) against same-key. A control that got
	// the same reply is no input.
	if len(vs) > 0 && len(got) == len(vs) && vs[0].Error == "" && got[0].body != nil {
		for i := 1; i < len(vs); i++ {
			v := vs[i]
			if v.Error != "" || got[i].body == nil || v.SameReply {
				continue
			}
			// A variant of the headers or of probe's own field is another
			// input however its request line reads.
			gi := got[i]
			gi.input = gi.input || len(v.Varies) > 0
			if !anotherAnswer(got[0], gi) {
				ev.Echoed = true
				continue
			}
			if ev.Answered == "" {
				ev.Answered = answeredInWords(got[0], gi, fmt.Sprintf("%s `%s` got another reply than same-key `%s`", v.Name,
					RequestLine(gi.request), RequestLine(got[0].request)), v.Varies)
			}
		}
	}
	if ev.Answered != "" || base == nil || !base.Input || !stableKey(*base) {
		return ev
	}
	// The main run: its busiest key against the other keys of its
	// operation that carried input, each stable.
	ref := KeptOf(*base)
	compared := 0
	for _, d := range MeasuredDigests(run) {
		if d.Op != base.Op || d.Key == base.Key || !d.Input || !stableKey(d) || compared == maxKeysCompared {
			continue
		}
		compared++
		if d.Top == base.Top {
			continue
		}
		k := KeptOf(d)
		if !anotherAnswer(ref, k) {
			ev.Echoed = true
			continue
		}
		ev.Answered = answeredInWords(ref, k, fmt.Sprintf("in the main run, `%s` got another reply than `%s`", RequestLine(k.request),
			RequestLine(ref.request)), nil)
		break
	}
	return ev
}

// answeredInWords says which input changed the reply, as the evidence
// gives it: "different values of `user` got different replies (…): the
// result is a function of `user`".
func answeredInWords(a, b Kept, which string, varied []string) string {
	names := differingInputs(a.request, b.request)
	if a.grpc || b.grpc {
		for i, n := range names {
			if n == "body" {
				names[i] = "the message" // a gRPC call's input is its message's fields
			}
		}
	}
	if len(varied) > 0 {
		names = varied // the variant's own inputs: headers, probe's field
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "`" + n + "`"
	}
	what, of := "the request's input", ""
	if len(quoted) > 0 {
		what = strings.Join(quoted, ", ")
	}
	if len(quoted) > 1 {
		// Varied together, the replies cannot say which one counts.
		of = "at least one of "
	}
	return fmt.Sprintf("different values of %s got different replies (%s, beyond nonces, timestamps and echoes of the request): "+
		"the result is a function of %s%s", what, which, of, what)
}

// RequestLine is the method and path of a request's text, its body left
// out and its length bounded.
func RequestLine(req string) string {
	method, rest, _ := strings.Cut(req, " ")
	target, _, _ := strings.Cut(rest, " ")
	line := strings.TrimSpace(method + " " + target)
	if len(line) > 120 {
		line = line[:117] + "..."
	}
	return line
}

// differingInputs are the inputs in which two requests' texts (method,
// path with its query, body) differ: each query parameter by name, "path"
// and "body".
func differingInputs(a, b string) []string {
	split := func(req string) (path string, query url.Values, body string) {
		_, rest, _ := strings.Cut(req, " ")
		target, body, _ := strings.Cut(rest, " ")
		path, raw, _ := strings.Cut(target, "?")
		query, _ = url.ParseQuery(raw)
		return path, query, body
	}
	pa, qa, ba := split(a)
	pb, qb, bb := split(b)
	var names []string
	if pa != pb {
		names = append(names, "path")
	}
	var params []string
	for n := range qa {
		if strings.Join(qa[n], "\x00") != strings.Join(qb[n], "\x00") {
			params = append(params, n)
		}
	}
	for n := range qb {
		if _, ok := qa[n]; !ok {
			params = append(params, n)
		}
	}
	sort.Strings(params)
	if len(params) > 5 {
		params = append(params[:5], fmt.Sprintf("%d more", len(params)-5))
	}
	names = append(names, params...)
	if ba != bb {
		names = append(names, "body")
	}
	return names
}

// MarkReplies sets each variant's SameReply: same-key's against the main
// run's reply to the key, the others against same-key's.
func MarkReplies(e *Experiment, run *result.Run, key string) {
	ref := ""
	for _, d := range run.Digests {
		if d.Key == key && len(d.Bodies) > 0 {
			ref = StableDigest(d.Bodies[0])
		}
	}
	for i := range e.Variants {
		v := &e.Variants[i]
		if i > 0 {
			ref = e.Variants[0].StableDigest
		}
		v.SameReply = v.StableDigest != "" && v.StableDigest == ref
	}
}

// volatile are the fragments of a reply that differ between two replies
// of the same work: nonces and ids (long hex or digit runs), timestamps.
var volatile = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?|` +
	`[0-9a-fA-F]{16,}|[0-9a-fA-F-]{32,}|\d{9,}`)

// StableDigest is the digest of a reply with its volatile fragments masked.
func StableDigest(body []byte) string {
	h := fnv.New64a()
	h.Write(volatile.ReplaceAll(body, []byte("\x00")))
	return fmt.Sprintf("%016x", h.Sum64())
}
