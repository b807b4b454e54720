package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The layering of the module is written in docs/DESIGN.md, in a fenced
// block headed ```layers: one line per layer, top first, each a name and
// the packages of the layer, groups of packages separated by "|". A
// package may import the packages of lower layers, and in its own layer
// only those of its own group. A line "forbid PKG P1 P2 …" takes back
// what the layers allow: PKG imports none of P1, P2, … (the command line
// does no analysis; it hands the run to the pipeline). A line "only PKG
// P1 P2 …" names all the packages of the module PKG may import (the run's
// data imports no load stage, nor anything but a few leaves). These tests
// hold the code to it.

const module = "github.com/probehq/probe"

// layering is where each package stands.
type layering struct {
	layer  map[string]int      // package → layer, 0 the top
	group  map[string]string   // package → its group within the layer
	names  []string            // layer names, top first
	forbid map[string][]string // package → packages it must not import
	only   map[string][]string // package → the only packages of the module it may import
}

// readLayering parses the ```layers block of a design document.
func readLayering(r io.Reader) (*layering, error) {
	l := &layering{layer: map[string]int{}, group: map[string]string{}, forbid: map[string][]string{}, only: map[string][]string{}}
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
		if name == "forbid" {
			f := strings.Fields(rest)
			if len(f) < 2 {
				return nil, fmt.Errorf("%q: want forbid PACKAGE IMPORT…", line)
			}
			l.forbid[f[0]] = append(l.forbid[f[0]], f[1:]...)
			continue
		}
		if name == "only" {
			f := strings.Fields(rest)
			if len(f) < 1 {
				return nil, fmt.Errorf("%q: want only PACKAGE IMPORT…", line)
			}
			l.only[f[0]] = append(slices.Clip(l.only[f[0]]), f[1:]...) // an empty list stays a list: nothing
			continue
		}
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
			case slices.Contains(l.forbid[p], imp):
				out = append(out, fmt.Sprintf("%s imports %s, which a forbid line of docs/DESIGN.md keeps from it", p, imp))
			case hasOnly(l, p) && !slices.Contains(l.only[p], imp):
				out = append(out, fmt.Sprintf("%s imports %s, not on its only line of docs/DESIGN.md", p, imp))
			}
		}
	}
	return out
}

// importGraph is the module's packages and their imports within the
// module, from go list (test files and the helper programs under
// testdata/ and bench/ left out), and each non-test file's imports of
// the packages with a forbid line (file paths relative to the module).
func importGraph(t *testing.T, l *layering) (graph map[string][]string, files map[string][]string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph, files = map[string][]string{}, map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath, Dir string
			Imports         []string
			GoFiles         []string
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
		if l.forbid[rel] == nil {
			continue
		}
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, name), nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			key := rel + "/" + name
			files[key] = []string{}
			for _, spec := range f.Imports {
				if imp := strings.Trim(spec.Path.Value, `"`); strings.HasPrefix(imp, module+"/") {
					files[key] = append(files[key], strings.TrimPrefix(imp, module+"/"))
				}
			}
		}
	}
	return graph, files
}

// pendingImports are files of internal/cli allowed, for a while, a
// forbidden import (a file on its way behind the pipeline), with the
// packages each may import. There are none: an entry the file no longer
// needs fails the test.
var pendingImports = map[string][]string{}

// withPending is graph with each package that has per-file imports made of
// its files' imports, less the pending ones; and the pending entries that
// name an import the file does not have, or a package not forbidden.
func withPending(l *layering, graph, files map[string][]string, pending map[string][]string) (map[string][]string, []string) {
	out := map[string][]string{}
	for p, imps := range graph {
		out[p] = imps
	}
	var stale []string
	byPkg := map[string][]string{}
	for file, imps := range files {
		pkg := filepath.Dir(file)
		if _, ok := byPkg[pkg]; !ok {
			byPkg[pkg] = []string{}
		}
		for _, imp := range imps {
			if !slices.Contains(pending[file], imp) && !slices.Contains(byPkg[pkg], imp) {
				byPkg[pkg] = append(byPkg[pkg], imp)
			}
		}
	}
	for pkg, imps := range byPkg {
		sort.Strings(imps)
		out[pkg] = imps
	}
	for file, imps := range pending {
		for _, imp := range imps {
			switch {
			case !slices.Contains(l.forbid[filepath.Dir(file)], imp):
				stale = append(stale, fmt.Sprintf("%s: %s is not forbidden to its package: no pending entry needed", file, imp))
			case !slices.Contains(files[file], imp):
				stale = append(stale, fmt.Sprintf("%s no longer imports %s: take it off pendingImports", file, imp))
			}
		}
	}
	sort.Strings(stale)
	return out, stale
}

func hasOnly(l *layering, p string) bool { _, ok := l.only[p]; return ok }

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
	l := designLayering(t)
	graph, files := importGraph(t, l)
	if len(l.forbid["internal/cli"]) == 0 || len(files) == 0 {
		t.Fatalf("docs/DESIGN.md forbids internal/cli nothing, or its files were not read (%d)", len(files))
	}
	graph, stale := withPending(l, graph, files, pendingImports)
	for _, v := range append(l.violations(graph), stale...) {
		t.Error(v)
	}
	for file, imps := range files { // which file, for a forbidden import
		for _, imp := range imps {
			switch {
			case !slices.Contains(l.forbid[filepath.Dir(file)], imp) || slices.Contains(pendingImports[file], imp):
			case filepath.Dir(file) == "internal/cli":
				t.Errorf("%s imports %s: let the pipeline package do that work", file, imp)
			default:
				t.Errorf("%s imports %s: a load stage; it takes the run's data from package result", file, imp)
			}
		}
	}
}

// The command line does no analysis: internal/cli reaches the analyzers
// and the flame graphs only through the pipeline.
func TestLayeringKeepsAnalysisOutOfTheCommandLine(t *testing.T) {
	l := designLayering(t)
	legal := map[string][]string{
		"internal/cli": {"pipeline", "probes", "report"},
		"pipeline":     {"analyzers", "flamegraphs", "lib/crash", "lib/frames", "probes", "report"},
		"report":       {"result"},
		"probes":       {"result"}, "result": nil, "analyzers": nil, "flamegraphs": nil, "lib/crash": nil, "lib/frames": nil,
	}
	if v := l.violations(legal); len(v) > 0 {
		t.Errorf("a legal graph was refused:\n%s", strings.Join(v, "\n"))
	}
	for _, imp := range []string{"analyzers", "analyzers/verdict", "analyzers/compare", "analyzers/fanout", "analyzers/contention",
		"flamegraphs", "lib/crash", "lib/frames", "lib/stats"} {
		graph := map[string][]string{"internal/cli": {"pipeline", imp}, "pipeline": nil, imp: nil}
		if got := strings.Join(l.violations(graph), "\n"); !strings.Contains(got, "internal/cli imports "+imp+",") {
			t.Errorf("internal/cli → %s went through: %q", imp, got)
		}
	}
	if got := strings.Join(l.violations(map[string][]string{"pipeline": {"internal/cli"}, "internal/cli": nil}),
		"\n"); !strings.Contains(got, "a layer above it") {
		t.Errorf("pipeline → internal/cli went through: %q", got)
	}
	// A pending file's import is let through, the same import from
	// another file is not, and an entry its file does not need is named.
	files := map[string][]string{"internal/cli/ramp.go": {"analyzers"}, "internal/cli/load.go": {"pipeline"}}
	graph, stale := withPending(l, map[string][]string{"internal/cli": {"analyzers", "pipeline"}, "pipeline": nil, "analyzers": nil}, files,
		map[string][]string{"internal/cli/ramp.go": {"analyzers"}, "internal/cli/load.go": {"lib/stats"}})
	if v := l.violations(graph); len(v) > 0 {
		t.Errorf("a pending import was refused: %v", v)
	}
	if len(stale) != 1 || !strings.Contains(stale[0], "load.go no longer imports lib/stats") {
		t.Errorf("stale entries %v", stale)
	}
	files["internal/cli/load.go"] = []string{"pipeline", "analyzers"}
	graph, _ = withPending(l, map[string][]string{"internal/cli": {"analyzers", "pipeline"}, "pipeline": nil, "analyzers": nil}, files,
		map[string][]string{"internal/cli/ramp.go": {"analyzers"}})
	if got := strings.Join(l.violations(graph), "\n"); !strings.Contains(got, "internal/cli imports analyzers,") {
		t.Errorf("load.go → analyzers went through as ramp.go's: %q", got)
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

// The writer and the thresholds take the run's data from package result,
// never from a load stage; result imports nothing of probe's but its
// leaves.
func TestLayeringKeepsTheWriterOffTheLoadStages(t *testing.T) {
	l := designLayering(t)
	stages := []string{"probes", "probes/fuzz", "probes/agents", "probes/ws", "probes/production", "target", "pipeline", "plan"}
	writers := []string{"thresholds"}
	for pkg := range l.layer {
		if pkg == "report" || strings.HasPrefix(pkg, "report/") {
			writers = append(writers, pkg) // the writer and every document kind beside it
		}
	}
	if len(writers) < 3 {
		t.Fatalf("the layers name too few writer packages: %v", writers)
	}
	for _, pkg := range writers {
		for _, stage := range stages {
			graph := map[string][]string{pkg: {"result", stage}, "result": nil, stage: nil}
			refused := regexp.MustCompile(`(?m)^` + pkg + `( \(\w+\))? imports ` + stage + `[ ,]`)
			if got := strings.Join(l.violations(graph), "\n"); !refused.MatchString(got) {
				t.Errorf("%s → %s went through: %q", pkg, stage, got)
			}
		}
	}
	legal := map[string][]string{"report": {"result", "analyzers"}, "result": {"lib/textline"}, "analyzers": nil, "lib/textline": nil}
	if v := l.violations(legal); len(v) > 0 {
		t.Errorf("a legal graph was refused:\n%s", strings.Join(v, "\n"))
	}
	for _, imp := range []string{"lib/stats", "lib/h1", "lib/pprofio"} {
		graph := map[string][]string{"result": {imp}, imp: nil}
		if got := strings.Join(l.violations(graph), "\n"); !strings.Contains(got, "result imports "+imp+", not on its only line") {
			t.Errorf("result → %s went through: %q", imp, got)
		}
	}
}

// The server under load has a room of its own below the engine (issue
// 36): target takes the run's data and the leaf libraries, nothing of the
// engine, the pipeline, the writer or the command line; the engine and
// the commands take the target from it.
func TestLayeringGivesTheTargetItsRoom(t *testing.T) {
	l := designLayering(t)
	for _, up := range []string{"probes", "probes/ws", "pipeline", "report", "internal/cli", "internal/cli/shared", "plan", "analyzers"} {
		graph := map[string][]string{"target": {up}, up: nil}
		if v := l.violations(graph); len(v) == 0 {
			t.Errorf("target → %s went through", up)
		}
	}
	legal := map[string][]string{"target": {"result", "lib/h1", "lib/pprofio", "lib/tick"}, "probes": {"target"},
		"pipeline": {"target"}, "internal/cli/sessions": {"target"}, "result": nil, "lib/h1": nil, "lib/pprofio": nil, "lib/tick": nil}
	if v := l.violations(legal); len(v) > 0 {
		t.Errorf("a legal graph was refused:\n%s", strings.Join(v, "\n"))
	}
}

// writerModules bounds the modules the writer compiles against, probe's
// own counted (issue 36: 29 when the run's data lived beside the gRPC
// client, 11 after): a report is written from data, not with the load
// engine's dependencies. Every package under report/ counts together.
const writerModules = 12

func TestTheWriterDependsOnFewModules(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", "../../report/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	mods := map[string]bool{}
	for _, m := range strings.Fields(string(out)) {
		mods[m] = true
	}
	if len(mods) > writerModules {
		names := slices.Sorted(maps.Keys(mods))
		t.Errorf("report depends on %d modules, more than %d: %s", len(mods), writerModules, strings.Join(names, " "))
	}
}
