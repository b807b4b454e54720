package analyzers

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"

	"github.com/probehq/probe/lib/frames"
)

// Rule says which frames do which kind of work, whether that work can move
// to load time, and what to do about it. The catalog is data (rules.json);
// users add rules for their own libraries with --rules.
type Rule struct {
	ID       string   `json:"id"`
	Class    string   `json:"class"`              // "load-time", "gc-pressure" or "info"
	What     string   `json:"what"`               // the work in plain words: "compressing"
	Detector string   `json:"detector,omitempty"` // how the work is found (detectors); default "frames"
	Frames   []string `json:"frames,omitempty"`
	Exclude  []string `json:"exclude,omitempty"` // a sample with one of these frames is not this work
	// OtherWork are frames of another kind of work the rule's frames call
	// (a regexp's matching under regexp.MatchString, which compiles first):
	// a sample with one of them below the rule's frame is not this work.
	OtherWork []string `json:"other_work,omitempty"`
	Invariant bool     `json:"invariant,omitempty"` // the work's result never depends on the request
	// PerItem: the work is invariant per stored item it is given (a
	// document loaded for a search hit): which items moves with the
	// request by nature, what each one costs does not.
	PerItem  bool    `json:"per_item,omitempty"`
	Scope    string  `json:"scope,omitempty"`     // part (default), whole or token: what of a reply the work makes
	Input    bool    `json:"input,omitempty"`     // the work may be decoding the request's own input
	MinShare float64 `json:"min_share,omitempty"` // of CPU or of allocations; default 0.05
	// InPlace: the work makes no value of its own (a sort reorders what it
	// is given), so allocating under it is not the work: that CPU and the
	// allocations make no finding of this rule.
	InPlace           bool   `json:"in_place,omitempty"`
	Suggestion        string `json:"suggestion"`
	VaryingSuggestion string `json:"varying_suggestion,omitempty"`

	frames, exclude, other []*regexp.Regexp
	memo                   *ruleMemo // shared by copies of the rule
	// peers are the other rules of an analysis whose frames name work: a
	// frame of this rule called inside theirs is their helper (Analyze).
	peers []*Rule
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
		case "load-time", "gc-pressure", "info":
		default:
			if !isMarker(r.Class) {
				return nil, fmt.Errorf("%s: rule %s: class %q (want load-time, gc-pressure or info; or a marker: serving, "+
					"request-body, sending, storage, connection)",
					name, r.ID, r.Class)
			}
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
		for _, f := range r.OtherWork {
			re, err := regexp.Compile(f)
			if err != nil {
				return nil, fmt.Errorf("%s: rule %s: other_work pattern %q: %v", name, r.ID, f, err)
			}
			r.other = append(r.other, re)
		}
		r.memo = &ruleMemo{match: map[string]bool{}, exclude: map[string]bool{}, other: map[string]bool{}}
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

// matchAt is the index (leaf first) of the first frame r matches, or -1;
// -1 too when the sample's work there is not r's own (owns).
func (r *Rule) matchAt(s stack) int {
	i, _ := r.match(s)
	return i
}

// match is matchAt and, when r's frames are in s inside another rule's
// work (so that rule holds the sample), that rule.
func (r *Rule) match(s stack) (int, *Rule) {
	for _, f := range s.funcs {
		if r.memo.excluded(r, f) {
			return -1, nil
		}
	}
	for i, f := range s.funcs {
		if r.memo.matched(r, f) {
			if ok, holder := r.ownedAt(s, i); !ok {
				return -1, holder
			}
			return i, nil
		}
	}
	return -1, nil
}

// outermost is the outermost frame of the run of r's frames in s that
// starts at i: all of the rule's work on that stack is under it (a
// package's rule matches its innermost leaf first: goldmark's many).
func (r *Rule) outermost(s stack, i int) int {
	for i+1 < len(s.funcs) && r.memo.matched(r, s.funcs[i+1]) {
		i++
	}
	return i
}

// streamMethod is a method of an io.Reader or io.Writer: a library that
// calls one calls what its caller handed it (a JSON encoder writing into
// a gzip writer), not a helper of its own.
var streamMethod = regexp.MustCompile(`\.(Write|WriteString|WriteByte|WriteRune|Read|ReadFrom|WriteTo|Flush|Close)$`)

// owns says whether the work at frame i is r's: it calls no frame of
// another kind of work (r's other_work: compiling is not matching), and
// it is called from the target's own code or from a library frame that
// is not inside another rule's work (a sort inside the regexp compiler is
// the compiler's, not a repeated sort).
func (r *Rule) owns(s stack, i int) bool {
	ok, _ := r.ownedAt(s, i)
	return ok
}

// ownedAt is owns, and the other rule whose work holds frame i when there
// is one.
func (r *Rule) ownedAt(s stack, i int) (bool, *Rule) {
	if len(r.other) > 0 {
		for k := 0; k < i; k++ {
			if r.memo.verdict(r.memo.other, r.other, s.funcs[k]) {
				return false, nil
			}
		}
	}
	if len(r.peers) == 0 || s.kinds[i] == frames.Runtime {
		return true, nil // the runtime's work (a GC assist) is nobody's helper
	}
	entry := i // the outermost frame of r's run of frames: how r's work was called
	for entry+1 < len(s.funcs) && s.kinds[entry+1] != frames.Own && r.memo.matched(r, s.funcs[entry+1]) {
		entry++
	}
	if streamMethod.MatchString(s.funcs[entry]) {
		return true, nil
	}
	for k := entry + 1; k < len(s.funcs) && s.kinds[k] != frames.Own; k++ {
		for _, o := range r.peers {
			if o.memo.matched(o, s.funcs[k]) && !o.excludedIn(s) {
				return false, o
			}
		}
	}
	return true, nil
}

// excludedIn says whether one of r's exclude frames is in s.
func (r *Rule) excludedIn(s stack) bool {
	for _, f := range s.funcs {
		if r.memo.excluded(r, f) {
			return true
		}
	}
	return false
}

// withPeers copies rules, each told the others whose frames name work
// (markers and frameless rules left out), for owns.
func withPeers(rules []Rule) []Rule {
	out := append([]Rule(nil), rules...)
	var work []*Rule
	for i := range out {
		if !isMarker(out[i].Class) && len(out[i].frames) > 0 {
			work = append(work, &out[i])
		}
	}
	for _, r := range work {
		for _, o := range work {
			if o.ID != r.ID {
				r.peers = append(r.peers, o)
			}
		}
	}
	return out
}

// ruleMemo remembers a rule's verdict per function name: a profile repeats
// a few thousand names across its samples, and each regexp runs once per name.
type ruleMemo struct {
	mu                    sync.Mutex
	match, exclude, other map[string]bool
}

func (m *ruleMemo) matched(r *Rule, fn string) bool {
	return m.verdict(m.match, r.frames, fn)
}

// matchedBy is matched as a predicate on function names.
func (m *ruleMemo) matchedBy(r *Rule) func(string) bool {
	return func(fn string) bool { return m.matched(r, fn) }
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
