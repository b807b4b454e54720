package analyzers

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/go-jsonnet"
)

// Rule says which frames do which kind of work, whether that work can move
// to load time, and what to do about it. The catalog is data (rules.json);
// users add rules for their own libraries with --rules.
type Rule struct {
	ID                string   `json:"id"`
	Class             string   `json:"class"` // "load-time", "gc-pressure" or "info"
	What              string   `json:"what"`  // the work in plain words: "compressing"
	Frames            []string `json:"frames,omitempty"`
	Exclude           []string `json:"exclude,omitempty"`   // a sample with one of these frames is not this work
	Invariant         bool     `json:"invariant,omitempty"` // the work's result never depends on the request
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
	if err != nil {
		panic(err) // the embedded catalog is tested
	}
	return rules
}

// LoadRules reads rules from a JSON or Jsonnet file and adds them to the
// built-in ones; a rule with a built-in id replaces it.
func LoadRules(path string) ([]Rule, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--rules: %v", err)
	}
	if strings.HasSuffix(path, ".jsonnet") || strings.HasSuffix(path, ".libsonnet") {
		vm := jsonnet.MakeVM()
		vm.Importer(&jsonnet.FileImporter{JPaths: []string{filepath.Dir(path)}})
		out, err := vm.EvaluateAnonymousSnippet(path, string(src))
		if err != nil {
			return nil, fmt.Errorf("--rules: %s", strings.TrimSpace(err.Error()))
		}
		src = []byte(out)
	}
	extra, err := parseRules(path, src)
	if err != nil {
		return nil, err
	}
	rules := DefaultRules()
	for _, r := range extra {
		replaced := false
		for i := range rules {
			if rules[i].ID == r.ID {
				rules[i], replaced = r, true
			}
		}
		if !replaced {
			rules = append(rules, r)
		}
	}
	return rules, nil
}

func parseRules(name string, src []byte) ([]Rule, error) {
	var rules []Rule
	if err := json.Unmarshal(src, &rules); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case asErr(err, &se):
			line, col := position(src, se.Offset)
			return nil, fmt.Errorf("--rules %s:%d:%d: %v", name, line, col, se)
		case asErr(err, &te):
			line, col := position(src, te.Offset)
			return nil, fmt.Errorf("--rules %s:%d:%d: %s must be %s", name, line, col, te.Field, te.Type)
		}
		return nil, fmt.Errorf("--rules %s: %v", name, err)
	}
	for i := range rules {
		r := &rules[i]
		if r.ID == "" {
			return nil, fmt.Errorf("--rules %s: rule %d has no id", name, i+1)
		}
		switch r.Class {
		case "load-time", "gc-pressure", "info":
		default:
			return nil, fmt.Errorf("--rules %s: rule %s: class %q (want load-time, gc-pressure or info)", name, r.ID, r.Class)
		}
		if len(r.Frames) == 0 && !builtinDetector[r.ID] {
			return nil, fmt.Errorf("--rules %s: rule %s has no frames", name, r.ID)
		}
		for _, f := range r.Frames {
			re, err := regexp.Compile(f)
			if err != nil {
				return nil, fmt.Errorf("--rules %s: rule %s: frame pattern %q: %v", name, r.ID, f, err)
			}
			r.frames = append(r.frames, re)
		}
		for _, f := range r.Exclude {
			re, err := regexp.Compile(f)
			if err != nil {
				return nil, fmt.Errorf("--rules %s: rule %s: exclude pattern %q: %v", name, r.ID, f, err)
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

// builtinDetector marks the rules whose detection is code, not frames.
var builtinDetector = map[string]bool{"per-request-full-scan": true}

func position(src []byte, offset int64) (line, col int) {
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
