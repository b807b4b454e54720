package pipeline

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/probehq/probe/analyzers/verdict"

	"github.com/probehq/probe/result"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/probes"
)

// The experiment's variants are built in the request's own protocol
// (DESIGN.md, the experiment): on HTTP a query parameter of probe's own,
// other keys, and the headers (another Accept-Language and User-Agent;
// the request without its other input headers: Cookie, Authorization,
// --header); on gRPC a field of probe's own in the message and a metadata
// entry, other messages, and the call without its metadata. A query
// string on a gRPC path is no gRPC call: the server answers "unknown
// method" to every one of them.

// requestVariant is one way of sending the base request again.
type requestVariant struct {
	name         string
	shouldMatter bool
	key          string // the microload's key whose call is sent
	// alter makes the variant's request of the microload's call (nil: the
	// call as the microload sends it); a nil result: the request cannot
	// be varied this way (a gRPC body of no single message).
	alter func(*h1.Request) *h1.Request
	// varies are the inputs the variant changes, by name (a header field,
	// probe's own parameter, a JSON body's member); for an input variant,
	// each one that stays put with the same reply counts as varied.
	varies []string
	// jsonRPC: the request is a JSON-RPC call, whose server refuses with
	// a 200 (an error, an MCP result with isError): the variant's calls
	// are checked for it.
	jsonRPC bool
}

// keyOf is the reply-digest key of the variant's calls: an altered request
// is kept apart from the key it came from.
func (v requestVariant) keyOf() string {
	if v.alter == nil {
		return v.key
	}
	return v.key + " +" + v.name
}

// opOf is the operation the variant's calls are counted under, so that
// each variant's errors are its own.
func (v requestVariant) opOf(op string) string {
	return op + " (" + experimentName + ": " + v.name + ")"
}

// IgnoredField is the number of the ignored-field variant's field in a
// gRPC message: the largest a field may have, which no schema uses in
// practice; a server keeps it as an unknown field and reads nothing of it.
const IgnoredField = protowire.MaxValidNumber

// requestVariants are the variants of base, in order of need: the
// controls and the first other key, other-value (a JSON body's), then the
// other keys, then the headers. grpc: the endpoint is a gRPC method.
func requestVariants(base *result.Digest, others []result.Digest, grpc bool) []requestVariant {
	vs := []requestVariant{{name: "same-key", key: base.Key}}
	body, isJSON := parseJSONBody(requestBody(base.Request))
	isJSON = isJSON && !grpc
	switch {
	case grpc:
		vs = append(vs, requestVariant{name: "ignored-field", key: base.Key, alter: withIgnoredField,
			varies: []string{fmt.Sprint("field ", IgnoredField), IgnoredParam}})
	case isJSON:
		vs = append(vs, requestVariant{name: "ignored-field", key: base.Key, alter: withIgnoredMember,
			varies: []string{body.prefix + "." + IgnoredParam}})
	default:
		vs = append(vs, requestVariant{name: "ignored-param", key: base.Key, alter: withIgnoredParam, varies: []string{IgnoredParam}})
	}
	var otherBodies [][]byte
	for i, k := range others {
		v := requestVariant{name: fmt.Sprintf("other-key-%d", i+1), shouldMatter: true, key: k.Key}
		if isJSON {
			otherBodies = append(otherBodies, requestBody(k.Request))
			v.varies = differingBodyInputs(requestBody(base.Request), requestBody(k.Request))
		}
		vs = append(vs, v)
	}
	if varied := variedBy(body); isJSON && len(varied) > 0 {
		at := min(len(vs), 3) // after the first other key
		vs = slices.Insert(vs, at, requestVariant{name: "other-value", shouldMatter: true, key: base.Key,
			alter: withOtherValues(otherValues(body, otherBodies)), varies: varied})
	}
	if !grpc {
		vs = append(vs, requestVariant{name: "other-header", shouldMatter: true, key: base.Key, alter: withOtherHeaders,
			varies: []string{"Accept-Language", "User-Agent"}})
	}
	var dropped []string
	for _, n := range base.Headers {
		if grpc || !strings.EqualFold(n, "Accept-Language") {
			dropped = append(dropped, n)
		}
	}
	if len(dropped) > 0 {
		vs = append(vs, requestVariant{name: "without-headers", shouldMatter: true, key: base.Key, alter: withoutHeaders(dropped),
			varies: dropped})
	}
	if isJSON && body.jsonRPC {
		for i := range vs {
			vs[i].jsonRPC = true
		}
	}
	return vs
}

// requestInputs are the inputs base carries that a load-time claim needs
// varied: its input header fields and its JSON body's members.
func requestInputs(base *result.Digest) []string {
	inputs := slices.Clone(base.Headers)
	if body, ok := parseJSONBody(requestBody(base.Request)); ok && !base.GRPC {
		inputs = append(inputs, inputNames(body.leaves())...)
	}
	return inputs
}

// withoutInput says whether base carries no input at all: a JSON body of
// no members (an MCP tool called with {}), no query, no input header.
func withoutInput(base *result.Digest) bool {
	body, ok := parseJSONBody(requestBody(base.Request))
	return ok && !base.GRPC && len(body.leaves()) == 0 && len(base.Headers) == 0 && !strings.Contains(verdict.RequestLine(base.Request), "?")
}

// withIgnoredParam is r with probe's own query parameter added.
func withIgnoredParam(r *h1.Request) *h1.Request {
	sep := "?"
	if strings.Contains(r.Path, "?") {
		sep = "&"
	}
	return h1.NewRequest(r.Method, r.Path+sep+IgnoredParam+"=1", r.Body, r.Header...)
}

// withIgnoredField is a gRPC call r with a field of probe's own in its
// message (IgnoredField, the varint 1) and a metadata entry of probe's own
// (probe-experiment: 1); nil when r's body is not one uncompressed
// message.
func withIgnoredField(r *h1.Request) *h1.Request {
	b := r.Body
	if len(b) < 5 || b[0] != 0 || int(binary.BigEndian.Uint32(b[1:5])) != len(b)-5 {
		return nil
	}
	msg := protowire.AppendTag(slices.Clone(b[5:]), IgnoredField, protowire.VarintType)
	msg = protowire.AppendVarint(msg, 1)
	frame := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(frame[1:5], uint32(len(msg)))
	header := append(slices.Clone(r.Header), h1.Field{Name: IgnoredParam, Value: "1"})
	return h1.NewRequest(r.Method, r.Path, append(frame, msg...), header...)
}

// withOtherHeaders is r asking for another language (added when r asks
// for none) as another client (User-Agent): a server that keys its work
// or its reply on either shows it.
func withOtherHeaders(r *h1.Request) *h1.Request {
	lang := "fr-FR,fr;q=0.9"
	if strings.HasPrefix(strings.ToLower(r.HeaderValue("Accept-Language")), "fr") {
		lang = "de-DE,de;q=0.9"
	}
	agent := probes.UserAgent + " (experiment: another client)"
	header := slices.DeleteFunc(slices.Clone(r.Header), func(f h1.Field) bool {
		return strings.EqualFold(f.Name, "Accept-Language") || strings.EqualFold(f.Name, "User-Agent")
	})
	header = append(header, h1.Field{Name: "Accept-Language", Value: lang}, h1.Field{Name: "User-Agent", Value: agent})
	return h1.NewRequest(r.Method, r.Path, r.Body, header...)
}

// withoutHeaders is r without the named header fields: a cookie or a key
// the server reads shows as another reply, an error (the variant is then
// void), or another cost.
func withoutHeaders(names []string) func(*h1.Request) *h1.Request {
	return func(r *h1.Request) *h1.Request {
		header := slices.DeleteFunc(slices.Clone(r.Header), func(f h1.Field) bool {
			return slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, f.Name) })
		})
		return h1.NewRequest(r.Method, r.Path, r.Body, header...)
	}
}

// shownRequest is a variant's request as the report shows it: the method
// and path, and what the variant changed beyond them.
func shownRequest(v requestVariant, r *h1.Request) string {
	s := r.Method + " " + r.Path
	switch {
	case v.name == "ignored-field" && !strings.HasPrefix(strings.ToLower(r.HeaderValue("Content-Type")), "application/grpc"):
		s += " (" + strings.TrimSuffix(v.varies[0], "."+IgnoredParam) + " with " + IgnoredParam + ": 1 of probe's own)"
	case v.name == "other-value":
		s += " (" + shownValues(r.Body, v.varies) + ")"
	case v.name == "ignored-field":
		s += fmt.Sprintf(" (the message with field %d = 1 of probe's own; metadata %s: 1)", IgnoredField, IgnoredParam)
	case v.name == "other-header":
		s += " (Accept-Language: " + r.HeaderValue("Accept-Language") + "; User-Agent: " + r.HeaderValue("User-Agent") + ")"
	case v.name == "without-headers":
		s += " (without " + strings.Join(v.varies, ", ") + ")"
	}
	return s
}

// variantCalls are the calls of a variant's operation and the failed
// among them.
func variantCalls(run *result.Run, op string) (calls, errors int64) {
	for _, o := range run.Ops {
		if op != "" && o.Name == op {
			return o.Calls, o.Errors
		}
	}
	return 0, 0
}

// maxReasonsShown bounds the reasons a void variant names.
const maxReasonsShown = 3

// variantReasons are a variant's errors in words, most frequent first:
// the server's answers ("grpc-status 12: unknown method …", "HTTP status
// 401"), and those of no reply (a refused connection, a timeout), which
// the run counts without an operation.
func variantReasons(run *result.Run, op string) string {
	prefix := op + ": "
	var parts []string
	var named int64
	for _, k := range result.ByCount(run.Errors) {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		named += run.Errors[k]
		if len(parts) < maxReasonsShown {
			parts = append(parts, fmt.Sprintf("%d× %s", run.Errors[k], strings.TrimPrefix(k, prefix)))
		}
	}
	if _, errs := variantCalls(run, op); errs-named > 0 {
		rest := errs - named
		parts = append(parts, fmt.Sprintf("%d without a reply (a refused or closed connection, a timeout)", rest))
	}
	return strings.Join(parts, "; ")
}
