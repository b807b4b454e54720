package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"probe/flamegraphs"
)

// runFlame is `probe flame PROFILE [--base PROFILE] -o FILE.html|FILE.svg`.
func runFlame(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("probe flame", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "output file: .html (interactive) or .svg (static)")
	base := fs.String("base", "", "base profile: draw a differential flame graph (red grew, blue shrank)")
	index := fs.String("sample-index", "", "sample type to draw (cpu, alloc_space, …; default: the profile's)")
	focus := fs.String("focus", "", "only stacks with a frame matching this regexp")
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(paths) != 1 || *out == "" {
		return usageError{"usage: probe flame PROFILE [--base PROFILE] [--sample-index NAME] [--focus REGEXP] -o FILE.html|FILE.svg"}
	}
	if !strings.HasSuffix(*out, ".html") && !strings.HasSuffix(*out, ".svg") {
		return usageError{fmt.Sprintf("-o %q: want a .html or .svg file", *out)}
	}
	var re *regexp.Regexp
	if *focus != "" {
		var err error
		if re, err = regexp.Compile(*focus); err != nil {
			return usageError{fmt.Sprintf("--focus: %v", err)}
		}
	}
	p, err := readProfile(paths[0])
	if err != nil {
		return err
	}
	var tree *flamegraphs.Tree
	if *base != "" {
		b, err := readProfile(*base)
		if err != nil {
			return err
		}
		tree, err = flamegraphs.FoldDiff(b, p, *index)
		if err != nil {
			return err
		}
	} else if tree, err = flamegraphs.Fold(p, *index, re); err != nil {
		return err
	}
	var buf bytes.Buffer
	o := flamegraphs.Options{Title: paths[0] + " (" + tree.Sample + ")"}
	if strings.HasSuffix(*out, ".svg") {
		err = flamegraphs.WriteSVG(&buf, tree, o)
	} else {
		err = flamegraphs.WriteHTML(&buf, tree, o)
	}
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d bytes\n", *out, buf.Len())
	return nil
}

// parseInterspersed parses flags wherever they stand among the arguments
// (probe flame cpu.pb.gz -o x.html) and returns the other arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) > 0 {
			rest, args = append(rest, args[0]), args[1:]
		}
	}
	return rest, nil
}
