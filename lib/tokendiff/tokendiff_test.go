package tokendiff

import (
	"strings"
	"testing"
)

// A reply with a nonce: the nonce is the one fragment, the rest stable.
func TestCompareFindsTheFragments(t *testing.T) {
	page := func(nonce string) []byte {
		return []byte("<html><body>" + strings.Repeat("<p>hello, the same every time</p>", 40) + "<i>" + nonce + "</i></body></html>")
	}
	c := Compare(page("a1b2c3d4e5"), page("f6g7h8i9j0"))
	if len(c.Fragments) != 1 || c.FragmentBytes() != 10 || c.StableShare() < 0.99 || !c.Complete {
		t.Fatalf("%+v", c)
	}
	if c.Fragments[0].First != "a1b2c3d4e5" || c.Fragments[0].Other != "f6g7h8i9j0" {
		t.Errorf("fragment %+v", c.Fragments[0])
	}
	if c := Compare(page("x"), page("x")); len(c.Fragments) != 0 || c.StableShare() != 1 {
		t.Errorf("the same reply twice: %+v", c)
	}
}
