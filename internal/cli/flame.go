package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/probehq/probe/flamegraphs"
)

// flameCommand is `probe flame PROFILE [--base PROFILE] -o FILE.html|FILE.svg`.
func flameCommand(fs *flag.FlagSet) runner {
	out := fs.String("o", "", "output file: .html (interactive) or .svg (static)")
	base := fs.String("base", "", "base profile: draw a differential flame graph (red grew, blue shrank)")
	index := fs.String("sample-index", "", "sample type to draw (cpu, alloc_space, …; default: the profile's)")
	focus := fs.String("focus", "", "only stacks with a frame matching this regexp")
	var prof profileFlags
	prof.registerMaxProfile(fs)
	return func(ctx context.Context, s streams, paths []string) error {
		if err := prof.validate(); err != nil {
			return err
		}
		return drawFlame(paths, *out, *base, *index, *focus, int64(prof.maxProfile), s.stdout)
	}
}

func drawFlame(paths []string, out, base, index, focus string, maxProfile int64, stdout io.Writer) error {
	if len(paths) != 1 || out == "" {
		return usageError{"usage: probe flame PROFILE [--base PROFILE] [--sample-index NAME] [--focus REGEXP] -o FILE.html|FILE.svg"}
	}
	if !strings.HasSuffix(out, ".html") && !strings.HasSuffix(out, ".svg") {
		return usageError{fmt.Sprintf("-o %q: want a .html or .svg file", out)}
	}
	var re *regexp.Regexp
	if focus != "" {
		var err error
		if re, err = regexp.Compile(focus); err != nil {
			return usageError{fmt.Sprintf("--focus: %v", err)}
		}
	}
	p, err := readProfile(paths[0], maxProfile)
	if err != nil {
		return err
	}
	var tree *flamegraphs.Tree
	if base != "" {
		b, err := readProfile(base, maxProfile)
		if err != nil {
			return err
		}
		tree, err = flamegraphs.FoldDiff(b, p, flamegraphs.FoldOptions{SampleIndex: index})
		if err != nil {
			return err
		}
	} else if tree, err = flamegraphs.Fold(p, flamegraphs.FoldOptions{SampleIndex: index, Focus: re}); err != nil {
		return err
	}
	var buf bytes.Buffer
	o := flamegraphs.Options{Title: paths[0] + " (" + tree.Sample + ")"}
	if strings.HasSuffix(out, ".svg") {
		err = flamegraphs.WriteSVG(&buf, tree, o)
	} else {
		err = flamegraphs.WriteHTML(&buf, tree, o)
	}
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d bytes\n", out, buf.Len())
	return nil
}
