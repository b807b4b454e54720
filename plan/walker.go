package plan

// The walker reads a decoded target file against its format, so that an
// error names its place (probe.jsonnet: microloads[2].checks: …).

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/probes"
)

// fileError is an error at a place in the file.
type fileError struct{ file, at, msg string }

func (e fileError) Error() string {
	if e.at == "" {
		return e.file + ": " + e.msg
	}
	return e.file + ": " + e.at + ": " + e.msg
}

// walker checks a decoded document against the format.
type walker struct{ file string }

func (w walker) fail(at, format string, args ...any) error {
	return fileError{w.file, at, fmt.Sprintf(format, args...)}
}

func (w walker) object(v any, at string, known ...string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, w.fail(at, "want an object, got %s", kindOf(v))
	}
	for k := range m {
		found := false
		for _, kk := range known {
			found = found || k == kk
		}
		if !found {
			return nil, w.fail(at, "unknown key %q (want %s)", k, strings.Join(known, ", "))
		}
	}
	return m, nil
}

func (w walker) str(m map[string]any, key, at string) (string, error) {
	v, ok := m[key]
	if !ok {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", w.fail(join(at, key), "want a string, got %s", kindOf(v))
	}
	return s, nil
}

// strs reads a string or a list of strings (numbers become their text).
func (w walker) strs(m map[string]any, key, at string) ([]string, error) {
	v, ok := m[key]
	if !ok {
		return nil, nil
	}
	return w.values(v, join(at, key))
}

func (w walker) values(v any, at string) ([]string, error) {
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case json.Number:
		return []string{x.String()}, nil
	case bool:
		return []string{strconv.FormatBool(x)}, nil
	case []any:
		var out []string
		for i, e := range x {
			s, err := w.values(e, fmt.Sprintf("%s[%d]", at, i))
			if err != nil {
				return nil, err
			}
			if len(s) != 1 {
				return nil, w.fail(fmt.Sprintf("%s[%d]", at, i), "want a string or a number")
			}
			out = append(out, s[0])
		}
		return out, nil
	}
	return nil, w.fail(at, "want a string, a number or a list of them, got %s", kindOf(v))
}

// headers reads {name: value}: as written, and checked as header fields.
func (w walker) headers(m map[string]any, key, at string) (map[string]string, []h1.Field, error) {
	v, ok := m[key]
	if !ok {
		return nil, nil, nil
	}
	hm, ok := v.(map[string]any)
	if !ok {
		return nil, nil, w.fail(join(at, key), "want an object of header names and values")
	}
	written := map[string]string{}
	var out []h1.Field
	for _, name := range slices.Sorted(maps.Keys(hm)) {
		s, ok := hm[name].(string)
		if !ok {
			return nil, nil, w.fail(join(at, key+"."+name), "want a string")
		}
		f, err := probes.ParseHeader(name + ": " + s)
		if err != nil {
			return nil, nil, w.fail(join(at, key+"."+name), "%v", err)
		}
		written[name] = s
		out = append(out, f)
	}
	return written, out, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}
