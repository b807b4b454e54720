package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the module's root, seen from internal/cli's tests.
const repoRoot = "../.."

// markdownFiles are the documents a reader follows links through.
func markdownFiles(t *testing.T) []string {
	files := []string{"README.md", "CHANGELOG.md"}
	for _, pattern := range []string{"docs/*.md", "docs/commands/*.md"} {
		m, err := filepath.Glob(filepath.Join(repoRoot, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, _ := filepath.Rel(repoRoot, f)
			files = append(files, rel)
		}
	}
	return files
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinks: every relative link of README.md, CHANGELOG.md and docs/
// reaches a file, and a link to a heading (#anchor) reaches one there.
func TestDocLinks(t *testing.T) {
	anchors := map[string]map[string]bool{}
	headingsOf := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		b, _ := os.ReadFile(filepath.Join(repoRoot, file))
		anchors[file] = headingAnchors(string(b))
		return anchors[file]
	}
	links := 0
	for _, file := range markdownFiles(t) {
		b, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range linksOf(string(b)) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), path)
				if _, err := os.Stat(filepath.Join(repoRoot, dest)); err != nil {
					t.Errorf("%s: link %s: no such file %s", file, target, dest)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(dest, ".md") && !headingsOf(dest)[anchor] {
				t.Errorf("%s: link %s: %s has no heading #%s", file, target, dest, anchor)
			}
		}
	}
	if links < 50 {
		t.Errorf("only %d relative links found: the documents were not read", links)
	}
}

// linksOf are the link targets of a Markdown text, code blocks left out.
func linksOf(text string) []string {
	var out []string
	fence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// headingAnchors are the anchors GitHub gives a text's headings: lower
// case, punctuation dropped, spaces made dashes, a repeated one numbered.
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// TestReadmeSetUp holds README.md to its promises: at most 400 lines, set-up
// commands that carry the Go toolchain go.mod asks for (so they work where
// GOTOOLCHAIN=local), and a test command that is the one .ci/run runs.
func TestReadmeSetUp(t *testing.T) {
	readme := readRepoFile(t, "README.md")
	if n := strings.Count(readme, "\n"); n > 400 {
		t.Errorf("README.md has %d lines, over 400: move the detail to docs/", n)
	}
	toolchain := regexp.MustCompile(`(?m)^toolchain (go\S+)$`).FindStringSubmatch(readRepoFile(t, "go.mod"))
	if toolchain == nil {
		t.Fatal("go.mod names no toolchain")
	}
	ci := readRepoFile(t, ".ci/run")
	if !strings.Contains(ci, "export GOTOOLCHAIN="+toolchain[1]+"\n") {
		t.Errorf(".ci/run does not export GOTOOLCHAIN=%s, go.mod's toolchain", toolchain[1])
	}
	_, setUp, _ := strings.Cut(readme, "## Set up\n")
	setUp, _, _ = strings.Cut(setUp, "\n## ")
	var commands []string
	fence := false
	for _, line := range strings.Split(setUp, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		} else if fence && line != "" && !strings.HasPrefix(line, "#") {
			commands = append(commands, line)
		}
	}
	if len(commands) != 2 {
		t.Fatalf("README.md's Set up has %d commands, want 2 (the main job, the tests): %q", len(commands), commands)
	}
	for _, c := range commands {
		if !strings.HasPrefix(c, "GOTOOLCHAIN="+toolchain[1]+" go ") {
			t.Errorf("README.md: %q does not carry GOTOOLCHAIN=%s, go.mod's toolchain", c, toolchain[1])
		}
	}
	test := strings.TrimPrefix(commands[1], "GOTOOLCHAIN="+toolchain[1]+" ")
	if !strings.Contains("\n"+ci+"\n", "\n"+test+"\n") {
		t.Errorf("README.md's test command %q is not a line of .ci/run", test)
	}
}

func readRepoFile(t *testing.T, name string) string {
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
