package cli

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// commandPages is where each command's page lives: docs/commands/<name>.md,
// a two-word command with a dash (fuzz-http.md).
const commandPages = "../../docs/commands"

func commandPage(name string) string { return strings.ReplaceAll(name, " ", "-") + ".md" }

// commandFlags is the set of flags a command's -h prints.
func commandFlags(c command) map[string]bool {
	fs := flag.NewFlagSet("probe "+c.name, flag.ContinueOnError)
	c.setup(fs)
	names := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
	return names
}

// flagLine is a flag's line in a page's Flags section: "- `--name …`".
var flagLine = regexp.MustCompile("^- `--?([a-z0-9][a-z0-9-]*)[ `]")

// documentedFlags are the flags the page's "## Flags" section has a line for.
func documentedFlags(page string) map[string]bool {
	names := map[string]bool{}
	in := false
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == "## Flags"
			continue
		}
		if m := flagLine.FindStringSubmatch(line); in && m != nil {
			names[m[1]] = true
		}
	}
	return names
}

// TestCommandPages holds every command's page to its flags: a page for
// each command `probe help` lists, a line for each flag its -h prints,
// no line for a flag it does not have, and no page without a command.
func TestCommandPages(t *testing.T) {
	pages := map[string]bool{}
	for _, c := range commands {
		file := commandPage(c.name)
		pages[file] = true
		b, err := os.ReadFile(filepath.Join(commandPages, file))
		if err != nil {
			t.Errorf("probe %s has no page: %v", c.name, err)
			continue
		}
		have, documented := commandFlags(c), documentedFlags(string(b))
		for _, name := range sortedKeys(have) {
			if !documented[name] {
				t.Errorf("docs/commands/%s: no line for --%s (probe %s -h prints it)", file, name, c.name)
			}
		}
		for _, name := range sortedKeys(documented) {
			if !have[name] {
				t.Errorf("docs/commands/%s: a line for --%s, which probe %s does not have", file, name, c.name)
			}
		}
	}
	entries, err := os.ReadDir(commandPages)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !pages[e.Name()] && e.Name() != "README.md" {
			t.Errorf("docs/commands/%s is the page of no command", e.Name())
		}
	}
}

// TestCommandPageExamples runs every example's flags past the command it
// calls: a `probe CMD …` line in a page's code (README.md's and the
// guides' too) uses only flags CMD has. Quoted text (a server command
// with flags of its own) and comments are left out.
func TestCommandPageExamples(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(commandPages, "*.md"))
	guides, _ := filepath.Glob("../../docs/*.md")
	files = append(append(files, guides...), "../../README.md")
	flagsOf, anyFlag := map[string]map[string]bool{}, map[string]bool{}
	for _, c := range commands {
		flagsOf[c.name] = commandFlags(c)
		for name := range flagsOf[c.name] {
			anyFlag[name] = true
		}
	}
	checked := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, ex := range examples(string(b)) {
			c, rest := lookup(strings.Fields(strings.TrimPrefix(ex, "probe ")))
			if c == nil {
				continue // probe NAME --file F: a microload of a target file
			}
			checked++
			for _, m := range exampleFlag.FindAllStringSubmatch(strings.Join(rest, " "), -1) {
				if !flagsOf[c.name][m[1]] {
					t.Errorf("%s: %q gives --%s, which probe %s does not have", file, strings.TrimSpace(ex), m[1], c.name)
				}
			}
		}
	}
	// In the pages', the guide's and README's prose too, a --name is some
	// command's flag: a renamed flag leaves none behind. `probe --help` and
	// curl's --data-binary (a crasher's reproduction) are the others' flags.
	for _, file := range files {
		if dir, base := filepath.Base(filepath.Dir(file)), filepath.Base(file); dir != "commands" &&
			base != "GUIDE.md" && base != "README.md" {
			continue
		}
		b, _ := os.ReadFile(file)
		for _, m := range proseFlag.FindAllStringSubmatch(string(b), -1) {
			if !anyFlag[m[1]] && m[1] != "help" && m[1] != "data-binary" {
				t.Errorf("%s names --%s, a flag of no command", file, m[1])
			}
		}
	}
	if checked < len(commands) {
		t.Errorf("%d examples checked, fewer than the %d commands: the pages were not read", checked, len(commands))
	}
}

var (
	exampleFlag = regexp.MustCompile(`(?:^|\s)--?([a-z][a-z0-9-]*)`)
	proseFlag   = regexp.MustCompile(`(?:^|[^\w-])--([a-z][a-z0-9-]+)`)
	quoted      = regexp.MustCompile(`\$?'[^']*'|"[^"]*"`)
)

// examples are the `probe …` command lines in a page's code blocks, each
// with its continuation lines, without quoted text and comments.
func examples(page string) []string {
	var out []string
	fence, cont := false, false
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "```") {
			fence, cont = !fence, false
			continue
		}
		line = strings.TrimSpace(strings.TrimPrefix(line, "$ "))
		if !fence || !(cont || strings.HasPrefix(line, "probe ")) {
			continue
		}
		line = quoted.ReplaceAllString(line, "Q")
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		if cont {
			out[len(out)-1] += " " + strings.TrimSuffix(line, `\`)
		} else {
			out = append(out, strings.TrimSuffix(line, `\`))
		}
		cont = strings.HasSuffix(line, `\`)
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
