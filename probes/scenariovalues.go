package probes

// Values a scenario takes from a target's replies are not trusted: they are
// bounded in length, found in one streaming pass over the reply (no tree of
// the whole document), and confined where they are put (a path cannot climb
// out of the prefix the file wrote, nor name another host).

import (
	"bytes"
	"context"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
)

// maxValue bounds a value taken from a reply (or given in a file): an id,
// a token, a link. A longer one fails its session.
const maxValue = 8 << 10

// value is a session's value and where it came from, for the error that
// names it.
type value struct {
	text string
	from string // "values.user", "the reply of step login"
}

// valueError is a value that cannot go where a step puts it: the session
// fails with this reason, and nothing is sent.
type valueError struct {
	hole, from, reason string
}

func (e *valueError) Error() string {
	return fmt.Sprintf("{{%s}} from %s %s", e.hole, e.from, e.reason)
}

var errValueTooLong = fmt.Errorf("is over %s", humanize.IBytes(maxValue))

// jsonWant is one JSON path to find, and what was found.
type jsonWant struct {
	path  []any
	raw   []byte // the value as it is in the reply (aliases it)
	found bool
}

// errJSONDone ends the pass once every path has its value.
var errJSONDone = errors.New("all found")

// jsonScan finds the values of wants in doc in one pass: values on none of
// the paths are skipped token by token, so the pass holds nothing the size
// of the reply (encoding/json's tree of a reply is about 30 times its size).
// It stops once every path has its value; the first of duplicate names wins.
// The error is the reply's syntax error when a path is left unfound.
type jsonScan struct {
	ctx   context.Context
	dec   *jsontext.Decoder
	wants []*jsonWant
	left  int
	ticks int
	name  []byte // the unquoted member name, reused
}

var jsonOptions = []jsontext.Options{
	// Duplicate names are allowed (they would need a set of every name of
	// an object) and invalid UTF-8 mangled, as encoding/json does.
	jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true),
}

func scanJSON(ctx context.Context, doc []byte, wants []*jsonWant) error {
	s := &jsonScan{ctx: ctx, wants: wants, left: len(wants)}
	all := make([]int, len(wants))
	for i := range all {
		all[i] = i
	}
	return s.run(doc, all, 0)
}

// run walks doc (a whole value) for the wants at index ids, at level.
func (s *jsonScan) run(doc []byte, ids []int, level int) error {
	outer := s.dec
	// A bytes.Buffer is read in place: the decoder copies nothing.
	s.dec = jsontext.NewDecoder(bytes.NewBuffer(doc), jsonOptions...)
	defer func() { s.dec = outer }()
	err := s.value(ids, level)
	if errors.Is(err, errJSONDone) {
		return nil
	}
	return err
}

// tick checks for the run's end every few thousand tokens: a large reply
// must not hold up a ramp that was told to stop.
func (s *jsonScan) tick() error {
	s.ticks++
	if s.ticks&2047 == 0 {
		return s.ctx.Err()
	}
	return nil
}

// value reads the next value, for the wants ids whose paths pass through
// it at level.
func (s *jsonScan) value(ids []int, level int) error {
	var here, deeper []int
	for _, i := range ids {
		switch w := s.wants[i]; {
		case w.found:
		case len(w.path) == level:
			here = append(here, i)
		default:
			deeper = append(deeper, i)
		}
	}
	if len(here) > 0 {
		raw, err := s.dec.ReadValue()
		if err != nil {
			return err
		}
		for _, i := range here {
			s.wants[i].raw, s.wants[i].found = raw, true
			s.left--
		}
		if len(deeper) > 0 { // a.b and a.b.c: the rest within the value read
			if err := s.run(raw, deeper, level); err != nil {
				return err
			}
		}
		if s.left == 0 {
			return errJSONDone
		}
		return nil
	}
	if len(deeper) == 0 {
		return s.skip()
	}
	switch s.dec.PeekKind() {
	case '{':
		if _, err := s.dec.ReadToken(); err != nil {
			return err
		}
		var match []int
		for s.dec.PeekKind() != '}' {
			if err := s.tick(); err != nil {
				return err
			}
			name, err := s.dec.ReadValue()
			if err != nil {
				return err
			}
			key := name[1 : len(name)-1]
			if bytes.IndexByte(key, '\\') >= 0 {
				s.name, _ = jsontext.AppendUnquote(s.name[:0], name)
				key = s.name
			}
			match = match[:0]
			for _, i := range deeper {
				if k, ok := s.wants[i].path[level].(string); ok && k == string(key) {
					match = append(match, i)
				}
			}
			if err := s.value(match, level+1); err != nil {
				return err
			}
		}
		_, err := s.dec.ReadToken()
		return err
	case '[':
		if _, err := s.dec.ReadToken(); err != nil {
			return err
		}
		var match []int
		for n := 0; s.dec.PeekKind() != ']'; n++ {
			if err := s.tick(); err != nil {
				return err
			}
			match = match[:0]
			for _, i := range deeper {
				if k, ok := s.wants[i].path[level].(int); ok && k == n {
					match = append(match, i)
				}
			}
			if err := s.value(match, level+1); err != nil {
				return err
			}
		}
		_, err := s.dec.ReadToken()
		return err
	}
	return s.skip() // a scalar where the paths want an object or an array
}

// skip passes over the next value token by token, holding none of it.
func (s *jsonScan) skip() error {
	switch s.dec.PeekKind() {
	case '{', '[':
		depth := s.dec.StackDepth()
		for {
			if _, err := s.dec.ReadToken(); err != nil {
				return err
			}
			if s.dec.StackDepth() <= depth {
				return nil
			}
			if err := s.tick(); err != nil {
				return err
			}
		}
	}
	_, err := s.dec.ReadValue()
	return err
}

// jsonText is a found value as a session's text: a string unquoted, a
// number as written (an integer's digits are kept exactly; others read as
// a float64, as before), true/false, an object or an array compacted.
// null is no value.
func jsonText(raw []byte) (string, error) {
	if len(raw) == 0 {
		return "", errors.New("has no such value")
	}
	switch raw[0] {
	case 'n':
		return "", errors.New("has no such value")
	case '"':
		if len(raw) > 6*maxValue+2 { // \uXXXX for each byte at most
			return "", errValueTooLong
		}
		b, err := jsontext.AppendUnquote(nil, raw)
		if err != nil && b == nil {
			return "", fmt.Errorf("holds a bad string: %v", err)
		}
		if len(b) > maxValue {
			return "", errValueTooLong
		}
		return string(b), nil
	case '{', '[':
		if len(raw) > 4*maxValue {
			return "", errValueTooLong
		}
		v := jsontext.Value(bytes.Clone(raw))
		if err := v.Compact(); err != nil {
			return "", fmt.Errorf("holds bad JSON: %v", err)
		}
		if len(v) > maxValue {
			return "", errValueTooLong
		}
		return string(v), nil
	case 't', 'f':
		return string(raw), nil
	}
	if len(raw) > maxValue {
		return "", errValueTooLong
	}
	if integer(raw) {
		return string(raw), nil
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return "", fmt.Errorf("holds a bad number")
	}
	return strconv.FormatFloat(f, 'f', -1, 64), nil
}

func integer(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// fillPath puts the values into a step's path template. A value after the
// file's own prefix ("/items/{{id}}") is escaped as before (keeping its
// slashes); a value the path starts with ("{{link}}") is a whole path, or
// an absolute URL of the target itself, which becomes its path. The path
// filled (up to the template's '?') must not climb out of what the file
// wrote: the file's own text has no dot segment (Validate), so one there
// came from a value.
func fillPath(tmpl string, vals map[string]value, t *Target) (string, error) {
	if !strings.Contains(tmpl, "{{") {
		return tmpl, nil
	}
	query := strings.IndexByte(tmpl, '?')
	var b strings.Builder
	last := 0
	var inPath []string
	for _, m := range holeRE.FindAllStringSubmatchIndex(tmpl, -1) {
		b.WriteString(tmpl[last:m[0]])
		last = m[1]
		name := tmpl[m[2]:m[3]]
		v := vals[name]
		if len(v.text) > maxValue {
			return "", &valueError{hole: name, from: v.from, reason: errValueTooLong.Error()}
		}
		if query < 0 || m[0] < query {
			inPath = append(inPath, name)
		}
		if m[0] == 0 {
			p, reason := wholePath(v.text, t)
			if reason != "" {
				return "", &valueError{hole: name, from: v.from, reason: reason}
			}
			b.WriteString(p)
			continue
		}
		b.WriteString(escapePathValue(v.text))
	}
	b.WriteString(tmpl[last:])
	out := b.String()
	// An escaped value holds no '?': the first one ends the path.
	path, _, _ := strings.Cut(out, "?")
	if reason := climbs(path); reason != "" {
		if len(inPath) == 0 {
			return "", fmt.Errorf("the path %s", reason)
		}
		culprit := inPath[0]
		for _, name := range inPath {
			if strings.ContainsAny(vals[name].text, ".%\\") {
				culprit = name
				break
			}
		}
		return "", &valueError{hole: culprit, from: vals[culprit].from, reason: reason}
	}
	return out, nil
}

// wholePath is value v as a whole request path on t, or why it cannot be.
func wholePath(v string, t *Target) (string, string) {
	u, err := url.Parse(v)
	if err != nil || u.Opaque != "" {
		return "", "is not a path or a URL"
	}
	if u.Scheme != "" || u.Host != "" {
		if !sameOrigin(u, t.URL) {
			return "", fmt.Sprintf("is a URL of another origin (%s), not the target's", origin(u))
		}
		if base := strings.TrimSuffix(t.URL.Path, "/"); base != "" {
			// Target.Request puts the target's base path before the path.
			rest, ok := strings.CutPrefix(u.EscapedPath(), base)
			if !ok || rest != "" && rest[0] != '/' {
				return "", fmt.Sprintf("is a URL outside the target's path %s", t.URL.Path)
			}
			u.RawPath, u.Path = "", rest
		}
	}
	p := u.EscapedPath()
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if strings.HasPrefix(p, "//") {
		return "", "names a host (//…), not a path"
	}
	if u.RawQuery != "" || u.ForceQuery {
		p += "?" + escapeQueryText(u.RawQuery)
	}
	return p, ""
}

func sameOrigin(u, target *url.URL) bool {
	return u.Host != "" && strings.EqualFold(u.Scheme, target.Scheme) &&
		strings.EqualFold(u.Hostname(), target.Hostname()) && port(u) == port(target)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

func origin(u *url.URL) string {
	switch {
	case u.Host == "":
		return u.Scheme + ": with no host"
	case u.Scheme == "":
		return "//" + u.Host
	}
	return u.Scheme + "://" + u.Host
}

// climbs says why path text v would leave the path it is put in, or "".
// A dot segment is refused rather than escaped: %2E is '.' to RFC 3986
// (§2.3, §6.2.2.2) and servers normalise it back, so no escaping confines
// it; the same goes for a backslash, a separator to some servers even as
// %5C. Each round of percent-decoding is checked, until none is left (a
// round shortens the text, and there are at most 8), for servers that
// decode more than once.
func climbs(v string) string {
	for range 8 {
		if strings.IndexByte(v, '\\') >= 0 {
			return "holds a backslash, which some servers read as /"
		}
		for seg := range strings.SplitSeq(v, "/") {
			if seg == "." || seg == ".." {
				return "holds a dot segment (. or ..), which would climb out of the path"
			}
		}
		u, err := url.PathUnescape(v)
		if err != nil || u == v {
			break
		}
		v = u
	}
	return ""
}

// escapeQueryText escapes what a request line cannot carry in a query.
func escapeQueryText(q string) string {
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		if c := q[i]; c <= ' ' || c >= 0x7f || c == '#' {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}
