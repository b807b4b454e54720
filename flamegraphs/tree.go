// Package flamegraphs folds pprof profiles into call trees and draws them:
// a static SVG in the manner of flamegraph.pl, and one self-contained,
// interactive HTML file. Both also draw differential flame graphs.
package flamegraphs

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/frames"
)

// Node is one frame of the folded call tree. Total includes the children;
// Base is the same frame's total in the base profile of a differential
// graph, scaled to this profile's total.
type Node struct {
	Name     string
	File     string
	Kind     string // "runtime", "std", "third-party" or "own"
	Total    int64
	Self     int64
	Base     float64
	Children []*Node
}

// Tree is a folded profile.
type Tree struct {
	Root   *Node
	Unit   string // of the values: "nanoseconds", "bytes", "count"
	Sample string // the sample index drawn
	Diff   bool
	f      *folder
}

// SampleIndex picks a sample type by name ("" = the profile's default or
// last) and says which exist when the name is unknown.
func SampleIndex(p *profile.Profile, name string) (int, error) {
	idx, err := p.SampleIndexByName(name)
	if err != nil {
		return 0, fmt.Errorf("no sample index %q in this profile (valid: %s)", name, strings.Join(sampleTypes(p), ", "))
	}
	return idx, nil
}

func sampleTypes(p *profile.Profile) []string {
	var ts []string
	for _, st := range p.SampleType {
		ts = append(ts, st.Type)
	}
	return ts
}

// FoldOptions say what to fold: the sample type ("" = the profile's
// default), a focus (only stacks with a matching frame count) and whose
// code a frame is (the main module; found in the profile when not given).
type FoldOptions struct {
	SampleIndex string
	Focus       *regexp.Regexp
	Code        frames.Code
}

// Fold merges p's samples into a call tree: identical stacks add up.
func Fold(p *profile.Profile, o FoldOptions) (*Tree, error) {
	idx, err := SampleIndex(p, o.SampleIndex)
	if err != nil {
		return nil, err
	}
	if o.Focus != nil {
		p = p.Copy()
		p.FilterSamplesByName(o.Focus, nil, nil, nil)
	}
	t := &Tree{Root: newNode("all", "", ""), Unit: p.SampleType[idx].Unit, Sample: p.SampleType[idx].Type}
	if o.Code.MainModule == "" {
		o.Code.MainModule = frames.MainModule(p)
	}
	f := newFolder(o.Code)
	t.f = f
	for _, s := range p.Sample {
		if v := s.Value[idx]; v != 0 {
			t.Root.add(f.frames(s), v, f)
		}
	}
	t.Root.sort()
	return t, nil
}

// frame is one function of a stack with where it is.
type frame struct{ name, file string }

// folder caches what each location and function resolves to: a profile
// repeats a few thousand of them across a hundred thousand stacks.
type folder struct {
	code     frames.Code
	locs     map[uint64][]frame
	kinds    map[string]string
	children map[childKey]*Node // one index for the whole tree: a map per node costs more than the node
	buf      []frame
	slab     []Node // nodes are allocated in blocks
}

func (f *folder) node(name, file, kind string) *Node {
	if len(f.slab) == 0 {
		f.slab = make([]Node, 4096)
	}
	n := &f.slab[0]
	f.slab = f.slab[1:]
	n.Name, n.File, n.Kind = name, file, kind
	return n
}

type childKey struct {
	parent *Node
	name   string
}

func newFolder(code frames.Code) *folder {
	return &folder{code: code, locs: map[uint64][]frame{}, kinds: map[string]string{}, children: map[childKey]*Node{}}
}

// frames lists s's functions root first; the slice is reused.
func (f *folder) frames(s *profile.Sample) []frame {
	f.buf = f.buf[:0]
	for i := len(s.Location) - 1; i >= 0; i-- {
		loc := s.Location[i]
		fr, ok := f.locs[loc.ID]
		if !ok {
			for j := len(loc.Line) - 1; j >= 0; j-- { // inlined calls, caller first
				if fn := loc.Line[j].Function; fn != nil {
					fr = append(fr, frame{fn.Name, fmt.Sprintf("%s:%d", fn.Filename, loc.Line[j].Line)})
				}
			}
			f.locs[loc.ID] = fr
		}
		f.buf = append(f.buf, fr...)
	}
	return f.buf
}

func (f *folder) kind(fr frame) string {
	k, ok := f.kinds[fr.name]
	if !ok {
		k = f.code.Kind(fr.name, strings.Split(fr.file, ":")[0])
		f.kinds[fr.name] = k
	}
	return k
}

// FoldDiff folds after and base; the base is first normalised to after's
// totals (profile.Normalize), so that each frame's Base and Total compare
// as shares and the colours show a change of share, not of load (Brendan
// Gregg's differential flame graphs).
func FoldDiff(base, after *profile.Profile, o FoldOptions) (*Tree, error) {
	o.Focus = nil
	ta, err := Fold(after, o)
	if err != nil {
		return nil, err
	}
	// Normalize compares the period types, which hand-made and some
	// converted profiles lack: an empty one stands in for both.
	scaled, ref := base.Copy(), &profile.Profile{SampleType: after.SampleType, PeriodType: after.PeriodType, Sample: after.Sample}
	if scaled.PeriodType == nil || ref.PeriodType == nil {
		scaled.PeriodType, ref.PeriodType = &profile.ValueType{}, &profile.ValueType{}
	}
	if err := scaled.Normalize(ref); err != nil {
		return nil, fmt.Errorf("base profile: %v", err)
	}
	o.SampleIndex = ta.Sample
	tb, err := Fold(scaled, o)
	if err != nil {
		return nil, fmt.Errorf("base profile: %v", err)
	}
	ta.Root.addBase(tb.Root, 1, ta.f)
	ta.Root.sort()
	ta.Diff = true
	return ta, nil
}

func newNode(name, file, kind string) *Node {
	return &Node{Name: name, File: file, Kind: kind}
}

func (n *Node) add(frames []frame, v int64, f *folder) {
	for ; len(frames) > 0; frames = frames[1:] {
		n.Total += v
		n = n.child(frames[0], f)
	}
	n.Total += v
	n.Self += v
}

// child finds or makes n's child fr: by a scan while n has few children
// (most frames have one or two), by the folder's index beyond.
func (n *Node) child(fr frame, f *folder) *Node {
	const scan = 16
	if len(n.Children) <= scan {
		for _, c := range n.Children {
			if c.Name == fr.name {
				return c
			}
		}
	} else if c := f.children[childKey{n, fr.name}]; c != nil {
		return c
	}
	c := f.node(fr.name, fr.file, f.kind(fr))
	n.Children = append(n.Children, c)
	switch {
	case len(n.Children) == scan+1: // from now on n's children are indexed
		for _, k := range n.Children {
			f.children[childKey{n, k.Name}] = k
		}
	case len(n.Children) > scan+1:
		f.children[childKey{n, fr.name}] = c
	}
	return c
}

// addBase adds b's totals, scaled, to the matching frames, making frames
// that only the base has (they shrank to nothing) with a zero total.
func (n *Node) addBase(b *Node, scale float64, f *folder) {
	n.Base += float64(b.Total) * scale
	for _, bc := range b.Children {
		n.child(frame{bc.Name, bc.File}, f).addBase(bc, scale, f)
	}
}

// Prune drops the frames too small to matter so that a tree keeps at most
// about limit frames (a browser draws a few hundred thousand smoothly, not
// millions); their time stays in their parents' totals. It returns how many
// frames it dropped.
func (n *Node) Prune(limit int) int {
	var totals []int64
	n.Walk(func(c *Node, _ int) { totals = append(totals, c.Total) })
	if len(totals) <= limit {
		return 0
	}
	sort.Slice(totals, func(i, j int) bool { return totals[i] > totals[j] })
	min := totals[limit]
	dropped := 0
	var prune func(c *Node)
	prune = func(c *Node) {
		kept := c.Children[:0]
		for _, k := range c.Children {
			if k.Total > min {
				kept = append(kept, k)
				prune(k)
			} else {
				k.Walk(func(*Node, int) { dropped++ })
			}
		}
		c.Children = kept
	}
	prune(n)
	return dropped
}

// sort orders children by name, as flamegraph.pl does, so the layout of a
// tree does not depend on sample order.
func (n *Node) sort() {
	if len(n.Children) > 1 {
		slices.SortFunc(n.Children, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
	}
	for _, c := range n.Children {
		c.sort()
	}
}

// Walk visits every node with its depth, parents first.
func (n *Node) Walk(f func(n *Node, depth int)) { n.walk(f, 0) }

func (n *Node) walk(f func(*Node, int), d int) {
	f(n, d)
	for _, c := range n.Children {
		c.walk(f, d+1)
	}
}
