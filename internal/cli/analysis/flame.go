package analysis

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/pipeline"
)

// flameCommand is `probe flame PROFILE [--base PROFILE] -o FILE.html|FILE.svg`.
func FlameCommand(fs *flag.FlagSet) shared.Runner {
	out := fs.String("o", "", "output file: .html (interactive) or .svg (static)")
	base := fs.String("base", "", "base profile: draw a differential flame graph (red grew, blue shrank)")
	index := fs.String("sample-index", "", "sample type to draw (cpu, alloc_space, …; default: the profile's)")
	focus := fs.String("focus", "", "only stacks with a frame matching this regexp")
	var prof shared.ProfileFlags
	prof.RegisterMaxProfile(fs)
	return func(ctx context.Context, s shared.Streams, paths []string) error {
		if err := prof.Validate(); err != nil {
			return err
		}
		return drawFlame(paths, *out, *base, *index, *focus, int64(prof.MaxProfile), s.Stdout)
	}
}

// drawFlame checks the words, has the pipeline draw the graph
// (pipeline.DrawFlame) and writes it to out.
func drawFlame(paths []string, out, base, index, focus string, maxProfile int64, stdout io.Writer) error {
	if len(paths) != 1 || out == "" {
		return shared.UsageError{Msg: "usage: probe flame PROFILE [--base PROFILE] [--sample-index NAME] [--focus REGEXP] -o FILE.html|FILE.svg"}
	}
	if !strings.HasSuffix(out, ".html") && !strings.HasSuffix(out, ".svg") {
		return shared.UsageError{Msg: fmt.Sprintf("-o %q: want a .html or .svg file", out)}
	}
	o := pipeline.FlameOptions{Profile: paths[0], Base: base, MaxProfile: maxProfile, SampleIndex: index, SVG: strings.HasSuffix(out, ".svg")}
	if focus != "" {
		re, err := regexp.Compile(focus)
		if err != nil {
			return shared.UsageError{Msg: fmt.Sprintf("--focus: %v", err)}
		}
		o.Focus = re
	}
	graph, err := pipeline.DrawFlame(o)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, graph, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d bytes\n", out, len(graph))
	return nil
}
