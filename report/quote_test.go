package report

import (
	"os/exec"
	"testing"
)

// A quoted word must come back from bash as the very string: the
// reproduction commands are pasted into a shell.
func TestShellQuoteRoundTripsThroughBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash here")
	}
	for _, s := range []string{"plain", "", "a b", "it's", "$HOME `id` $(id)", "http://127.0.0.1:8080/x?n=1&q=*", "tab\there",
		"\x01\xff\u00e9", "new\nline", "!event"} {
		out, err := exec.Command(bash, "-c", "printf %s "+ShellQuote(s)).Output()
		if err != nil {
			t.Fatalf("%q quoted as %s: %v", s, ShellQuote(s), err)
		}
		if string(out) != s {
			t.Errorf("%q quoted as %s came back as %q", s, ShellQuote(s), out)
		}
	}
	if q := ShellQuote("/usr/bin/server"); q != "/usr/bin/server" {
		t.Errorf("a plain word quoted as %s", q)
	}
}
