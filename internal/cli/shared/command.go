package shared

import (
	"context"
	"fmt"
	"io"
)

// streams are where a command writes: stdout for the report (or JSON),
// stderr for progress and the table under --json.
type Streams struct{ Stdout, Stderr io.Writer }

// runner runs a command whose flags are parsed; args are the words that
// were not flags.
type Runner func(ctx context.Context, s Streams, args []string) error

// usageError is a bad command line: exit status 2, one line.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// interruptedError: Ctrl-C ended the run; what was measured is written.
type InterruptedError struct{ Dir string }

func (e InterruptedError) Error() string {
	return "interrupted: what was measured is in " + e.Dir
}

// noWords refuses words a command does not take.
func NoWords(name string, words []string) error {
	if len(words) > 0 {
		return UsageError{fmt.Sprintf("%s: unexpected argument %q", name, words[0])}
	}
	return nil
}

// The last words of a failed run are its error's lines, each made one
// printable line (whatever a server's text in it holds), at most
// maxErrorLine bytes, and at most maxErrorLines of them (a failed build's
// tail, a line per failed check).
const (
	MaxErrorLine  = 4000
	MaxErrorLines = 100
)
