package textline

import (
	"strings"
	"testing"
)

func TestOf(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain", "plain"},
		{"\x1b[2Jclear", "[2Jclear"},
		{"a\r\nprobe: all checks passed, exit 0", "a probe: all checks passed, exit 0"},
		{"tab\there  and\x00nul", "tab here and nul"},
		{"\xffbad", "\uFFFDbad"},
		{"c1\u009bcsi", "c1 csi"},
		{"  lead and trail \n", "lead and trail"},
		{"ls\u2028sep", "ls sep"},
	}
	for _, c := range cases {
		if got := Of(c.in, 100); got != c.want {
			t.Errorf("Of(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestOfCutsBetweenCharacters(t *testing.T) {
	got := Of(strings.Repeat("é", 1000), 11)
	if got != strings.Repeat("é", 5)+"…" {
		t.Fatalf("got %q", got)
	}
	huge := strings.Repeat("x\n", 1<<20)
	if got := Of(huge, 50); len(got) > 50+len("…") || strings.ContainsAny(got, "\n") {
		t.Fatalf("a 2 MiB text with newlines gave %d bytes: %q", len(got), got)
	}
}

func TestNames(t *testing.T) {
	var names []string
	for i := 0; i < 2001; i++ {
		names = append(names, "svc\n"+strings.Repeat("n", 3))
	}
	got := Names(names, 10)
	if strings.Contains(got, "\n") || !strings.HasSuffix(got, " and 1981 more") {
		t.Fatalf("got %q", got)
	}
	if n := strings.Count(got, "svc nnn"); n != MaxNames {
		t.Fatalf("%d names shown, want %d", n, MaxNames)
	}
	if got := Names([]string{"a", "b"}, 10); got != "a, b" {
		t.Fatalf("got %q", got)
	}
}
