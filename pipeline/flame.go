package pipeline

import (
	"bytes"
	"regexp"

	"github.com/probehq/probe/flamegraphs"
)

// FlameOptions are one flame graph of a profile file (`probe flame`).
type FlameOptions struct {
	Profile string // the profile file drawn; it titles the graph
	// Base is a base profile's file: the graph is then differential (red
	// grew, blue shrank); "": none.
	Base        string
	MaxProfile  int64          // the most bytes a profile file may hold
	SampleIndex string         // the sample type; "": the profile's
	Focus       *regexp.Regexp // only stacks with a matching frame; not with Base
	SVG         bool           // a static SVG; else the interactive HTML
}

// DrawFlame reads o's profiles, folds them and draws the graph: the
// file's bytes.
func DrawFlame(o FlameOptions) ([]byte, error) {
	p, err := ReadProfile(o.Profile, o.MaxProfile)
	if err != nil {
		return nil, err
	}
	var tree *flamegraphs.Tree
	if o.Base != "" {
		b, err := ReadProfile(o.Base, o.MaxProfile)
		if err != nil {
			return nil, err
		}
		tree, err = flamegraphs.FoldDiff(b, p, flamegraphs.FoldOptions{SampleIndex: o.SampleIndex})
		if err != nil {
			return nil, err
		}
	} else if tree, err = flamegraphs.Fold(p, flamegraphs.FoldOptions{SampleIndex: o.SampleIndex, Focus: o.Focus}); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	fo := flamegraphs.Options{Title: o.Profile + " (" + tree.Sample + ")"}
	if o.SVG {
		err = flamegraphs.WriteSVG(&buf, tree, fo)
	} else {
		err = flamegraphs.WriteHTML(&buf, tree, fo)
	}
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
