package cli

import (
	"testing"
)

func TestScaleBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"scale", "--notes", "500,400"}, "the sizes must increase"},
		{[]string{"scale", "--notes", "500"}, "two sizes at least"},
		{[]string{"scale", "--notes", "a,b"}, "want sizes like"},
		{[]string{"scale", "--cmd", "server --port {port}", "--vault-gen"}, "with {vault}"},
		{[]string{"scale", "--cmd", "server {vault}"}, "--vault-gen"},
		{[]string{"scale", "nosuch"}, `unknown microload "nosuch"`},
		{[]string{"scale", "--fixture-mode", "lazy"}, `--fixture-mode "lazy": want per-request or load-time`},
		{[]string{"scale", "--cmd", "server '{vault}", "--vault-gen"}, "not a command"},
	} {
		badInput(t, tc.args, exitUsage, tc.want)
	}
}

// A server that never shows a change: each change times out with a clear
