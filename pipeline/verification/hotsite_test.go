package verification

import (
	"testing"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/internal/proftest"
)

// A finding names a generic function as the analyzer shows it, its type
// arguments elided; the profile spells them out: the hot site is found
// all the same, at the own frame that calls into the library.
func TestHotSiteOfAGenericLeaf(t *testing.T) {
	lib := "github.com/google/jsonschema-go/jsonschema."
	p := proftest.Folded(map[string]int64{
		"main.validate;main.compile;encoding/json.Unmarshal;" + lib + "(*Schema).UnmarshalJSON;" + lib +
			"unmarshalStructWithMap[go.shape.struct { Name string }]": 9e8,
		"main.validate;main.compile;" + lib + "(*Schema).Resolve": 3e8,
	})
	f := analyzers.Finding{Rule: "repeated-schema", OwnFrame: "main.compile",
		Frames: []string{lib + "unmarshalStructWithMap[…]", lib + "(*Schema).UnmarshalJSON", "…", "main.compile", "main.validate"}}
	site, ok := HotSite(p, f)
	if !ok || site.Callee != "encoding/json.Unmarshal" || len(site.Frames) == 0 || site.Frames[0].Func != "main.compile" {
		t.Fatalf("hot site %+v, %v: want main.compile's call of encoding/json.Unmarshal", site, ok)
	}
}

// A finding whose own frame is one caller of its work (addTool) and whose
// leaf is under another (buildMCPServer's parse): the chain's own frame that
// holds the leaf is the site, not "no sample".
func TestHotSiteOfALeafUnderAnotherOwnFrame(t *testing.T) {
	lib := "github.com/google/jsonschema-go/jsonschema."
	p := proftest.Folded(map[string]int64{
		"main.handler;main.build;encoding/json.Unmarshal;" + lib + "(*Schema).UnmarshalJSON;" + lib +
			"unmarshalStructWithMap[go.shape.struct { Name string }]": 9e8,
		"main.handler;main.build;main.addTool;" + lib + "(*Schema).Resolve": 3e8,
	})
	f := analyzers.Finding{Rule: "repeated-schema", OwnFrame: "main.addTool",
		Frames: []string{lib + "unmarshalStructWithMap[…]", lib + "(*Schema).UnmarshalJSON", "…", "main.build", "main.handler"}}
	site, ok := HotSite(p, f)
	if !ok || site.Callee != "encoding/json.Unmarshal" || len(site.Frames) == 0 || site.Frames[0].Func != "main.build" {
		t.Fatalf("hot site %+v, %v: want main.build's call of encoding/json.Unmarshal", site, ok)
	}
}
