package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// The layering of the module is written in docs/DESIGN.md, in a fenced
// block headed ```layers: one line per layer, top first, each a name and
// the packages of the layer, groups of packages separated by "|". A
// package may import the packages of lower layers, and in its own layer
// only those of its own group. These tests hold the code to it.

const module = "github.com/probehq/probe"

// layering is where each package stands.
type layering struct {
	layer map[string]int    // package → layer, 0 the top
	group map[string]string // package → its group within the layer
	names []string          // layer names, top first
}

// readLayering parses the ```layers block of a design document.
func readLayering(r io.Reader) (*layering, error) {
	l := &layering{layer: map[string]int{}, group: map[string]string{}}
	sc := bufio.NewScanner(r)
	in := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "```layers":
			in = true
			continue
		case !in:
			continue
		case line == "```":
			if len(l.names) == 0 {
				return nil, fmt.Errorf("the layers block is empty")
			}
			return l, nil
		case line == "":
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		n := len(l.names)
		l.names = append(l.names, name)
		for g, group := range strings.Split(rest, "|") {
			for _, pkg := range strings.Fields(group) {
				if _, dup := l.layer[pkg]; dup {
					return nil, fmt.Errorf("%s stands in two layers", pkg)
				}
				l.layer[pkg] = n
				l.group[pkg] = fmt.Sprintf("%s/%d", name, g)
			}
		}
	}
	return nil, fmt.Errorf("no ```layers block")
}

// violations lists each import of graph (package → its imports, module
// paths relative to the module) that the layering forbids, and each
// package it does not place.
func (l *layering) violations(graph map[string][]string) []string {
	var out []string
	pkgs := make([]string, 0, len(graph))
	for p := range graph {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		lp, ok := l.layer[p]
		if !ok {
			out = append(out, fmt.Sprintf("%s is in no layer of docs/DESIGN.md", p))
			continue
		}
		for _, imp := range graph[p] {
			li, ok := l.layer[imp]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("%s imports %s, which is in no layer", p, imp))
			case li < lp:
				out = append(out, fmt.Sprintf("%s (%s) imports %s (%s), a layer above it", p, l.names[lp], imp, l.names[li]))
			case li == lp && l.group[imp] != l.group[p]:
				out = append(out, fmt.Sprintf("%s imports %s: both are %s, and neither may import the other", p, imp, l.names[lp]))
			}
		}
	}
	return out
}

// importGraph is the module's packages and their imports within the
// module, from go list (test files and the helper programs under
// testdata/ and bench/ left out).
func importGraph(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if skipPackage(p.ImportPath) {
			continue
		}
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		graph[rel] = nil
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module+"/") {
				graph[rel] = append(graph[rel], strings.TrimPrefix(imp, module+"/"))
			}
		}
	}
	return graph
}

func skipPackage(path string) bool {
	return strings.Contains(path, "/testdata/") || strings.HasPrefix(path, module+"/bench/")
}

func designLayering(t *testing.T) *layering {
	t.Helper()
	f, err := os.Open("../../docs/DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := readLayering(f)
	if err != nil {
		t.Fatalf("docs/DESIGN.md: %v", err)
	}
	return l
}

func TestImportsFollowTheLayering(t *testing.T) {
	for _, v := range designLayering(t).violations(importGraph(t)) {
		t.Error(v)
	}
}

// The three back-edges a review found in the landed tree (before the
// layering was written down) must each be caught.
func TestLayeringCatchesBackEdges(t *testing.T) {
	l := designLayering(t)
	graph := map[string][]string{
		"analyzers":   {"probes"},
		"probes/fuzz": {"analyzers", "probes"},
		"flamegraphs": {"analyzers"},
		"probes":      {"lib/h1"},
		"lib/h1":      nil,
	}
	got := strings.Join(l.violations(graph), "\n")
	for _, edge := range []string{"analyzers imports probes", "probes/fuzz imports analyzers", "flamegraphs imports analyzers"} {
		if !strings.Contains(got, edge) {
			t.Errorf("the layering lets %q through; violations:\n%s", edge, got)
		}
	}
	if strings.Contains(got, "probes/fuzz imports probes:") || strings.Contains(got, "probes imports lib/h1") {
		t.Errorf("a legal import was refused:\n%s", got)
	}
	if v := l.violations(map[string][]string{"nowhere": nil}); len(v) != 1 || !strings.Contains(v[0], "in no layer") {
		t.Errorf("an unplaced package: %v", v)
	}
}
