package analyzers

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"
)

// Rule says which frames do which kind of work, whether that work can move
// to load time, and what to do about it. The catalog is data (rules.json);
// users add rules for their own libraries with --rules.
type Rule struct {
	ID                string   `json:"id"`
	Class             string   `json:"class"`              // "load-time", "gc-pressure" or "info"
	What              string   `json:"what"`               // the work in plain words: "compressing"
	Detector          string   `json:"detector,omitempty"` // how the work is found (detectors); default "frames"
	Frames            []string `json:"frames,omitempty"`
	Exclude           []string `json:"exclude,omitempty"`   // a sample with one of these frames is not this work
	Invariant         bool     `json:"invariant,omitempty"` // the work's result never depends on the request
	Scope             string   `json:"scope,omitempty"`     // part (default), whole or token: what of a reply the work makes
	Input             bool     `json:"input,omitempty"`     // the work may be decoding the request's own input
	MinShare          float64  `json:"min_share,omitempty"` // of CPU or of allocations; default 0.05
	Suggestion        string   `json:"suggestion"`
	VaryingSuggestion string   `json:"varying_suggestion,omitempty"`

	frames, exclude []*regexp.Regexp
	memo            *ruleMemo // shared by copies of the rule
}

//go:embed rules.json
var defaultRulesJSON []byte

// DefaultRules is the built-in catalog.
func DefaultRules() []Rule {
	rules, err := parseRules("rules.json", defaultRulesJSON)
	for i := range rules {
		if rules[i].Detector == "" {
			rules[i].Detector = "frames"
		}
		if err == nil {
			err = checkDetector("rules.json", &rules[i])
		}
	}
	if err != nil {
		panic(err) // the embedded catalog is tested
	}
	return rules
}

// AddRules reads rules in the catalog's JSON (a file's, or a Jsonnet
// file's output; name says which in errors) and adds them to the built-in
// ones; a rule with a built-in id replaces it.
func AddRules(name string, src []byte) ([]Rule, error) {
	extra, err := parseRules(name, src)
	if err != nil {
		return nil, err
	}
	rules := DefaultRules()
	for _, r := range extra {
		replaced := false
		for i := range rules {
			if rules[i].ID == r.ID {
				if r.Detector == "" { // a rule that replaces a built-in keeps its way of finding the work
					r.Detector = rules[i].Detector
				}
				rules[i], replaced = r, true
			}
		}
		if !replaced {
			rules = append(rules, r)
		}
	}
	for i := range rules {
		if rules[i].Detector == "" {
			rules[i].Detector = "frames"
		}
		if err := checkDetector(name, &rules[i]); err != nil {
			return nil, err
		}
	}
	return rules, nil
}

// checkDetector says whether a rule names a known detector and has the
// frames it needs.
func checkDetector(file string, r *Rule) error {
	d, ok := detectors[r.Detector]
	if !ok {
		return fmt.Errorf("%s: rule %s: unknown detector %q (want frames, full-scan, log-storm, gc or reply)", file, r.ID, r.Detector)
	}
	if (d.needsFrames || isMarker(r.Class)) && len(r.Frames) == 0 {
		return fmt.Errorf("%s: rule %s has no frames", file, r.ID)
	}
	return nil
}

func parseRules(name string, src []byte) ([]Rule, error) {
	var rules []Rule
	if err := json.Unmarshal(src, &rules); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case asErr(err, &se):
			line, col := Position(src, se.Offset)
			return nil, fmt.Errorf("%s:%d:%d: %v", name, line, col, se)
		case asErr(err, &te):
			line, col := Position(src, te.Offset)
			return nil, fmt.Errorf("%s:%d:%d: %s must be %s", name, line, col, te.Field, te.Type)
		}
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	for i := range rules {
		r := &rules[i]
		if r.ID == "" {
			return nil, fmt.Errorf("%s: rule %d has no id", name, i+1)
		}
		switch r.Class {
		case "load-time", "gc-pressure", "info", markServing, markRequestBody, markSending, markStorage:
		default:
			return nil, fmt.Errorf("%s: rule %s: class %q (want load-time, gc-pressure or info; or a marker: serving, request-body, sending, storage)", name, r.ID, r.Class)
		}
		switch r.Scope {
		case "", scopePart, scopeWhole, scopeToken:
		default:
			return nil, fmt.Errorf("%s: rule %s: scope %q (want part, whole or token)", name, r.ID, r.Scope)
		}
		for _, f := range r.Frames {
			re, err := regexp.Compile(f)
			if err != nil {
				return nil, fmt.Errorf("%s: rule %s: frame pattern %q: %v", name, r.ID, f, err)
			}
			r.frames = append(r.frames, re)
		}
		for _, f := range r.Exclude {
			re, err := regexp.Compile(f)
			if err != nil {
				return nil, fmt.Errorf("%s: rule %s: exclude pattern %q: %v", name, r.ID, f, err)
			}
			r.exclude = append(r.exclude, re)
		}
		r.memo = &ruleMemo{match: map[string]bool{}, exclude: map[string]bool{}}
		if r.MinShare == 0 {
			r.MinShare = 0.05
		}
		if r.What == "" {
			r.What = r.ID
		}
	}
	return rules, nil
}

// Position is the line and column (from 1) of a byte offset in src: where
// a JSON syntax error is, for a one-line message.
func Position(src []byte, offset int64) (line, col int) {
	line, col = 1, 1
	for _, c := range src[:min(int64(len(src)), offset)] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// matchAt is the index (leaf first) of the first frame r matches, or -1.
func (r *Rule) matchAt(s stack) int {
	for _, f := range s.funcs {
		if r.memo.excluded(r, f) {
			return -1
		}
	}
	for i, f := range s.funcs {
		if r.memo.matched(r, f) {
			return i
		}
	}
	return -1
}

// ruleMemo remembers a rule's verdict per function name: a profile repeats
// a few thousand names across its samples, and each regexp runs once per name.
type ruleMemo struct {
	mu             sync.Mutex
	match, exclude map[string]bool
}

func (m *ruleMemo) matched(r *Rule, fn string) bool {
	return m.verdict(m.match, r.frames, fn)
}

func (m *ruleMemo) excluded(r *Rule, fn string) bool {
	if len(r.exclude) == 0 {
		return false
	}
	return m.verdict(m.exclude, r.exclude, fn)
}

func (m *ruleMemo) verdict(cache map[string]bool, res []*regexp.Regexp, fn string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := cache[fn]
	if !ok {
		for _, re := range res {
			if re.MatchString(fn) {
				v = true
				break
			}
		}
		cache[fn] = v
	}
	return v
}

func asErr[T error](err error, target *T) bool {
	t, ok := err.(T)
	if ok {
		*target = t
	}
	return ok
}
