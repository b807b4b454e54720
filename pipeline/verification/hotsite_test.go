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
	checkSchemaUnmarshalSite(t, "main.validate", "main.compile", "main.compile", "main.compile")
}

// A finding whose own frame is one caller of its work (addTool) and whose
// leaf is under another (buildMCPServer's parse): the chain's own frame that
// holds the leaf is the site, not "no sample".
func TestHotSiteOfALeafUnderAnotherOwnFrame(t *testing.T) {
	checkSchemaUnmarshalSite(t, "main.handler", "main.build", "main.build;main.addTool", "main.addTool")
}

// checkSchemaUnmarshalSite profiles handler calling builder, which decodes a
// jsonschema Schema through encoding/json (the hot leaf, a generic), and
// handler reaching Resolve through resolveChain; a repeated-schema finding
// owned by ownFrame must find its hot site at builder's call of
// encoding/json.Unmarshal.
func checkSchemaUnmarshalSite(t *testing.T, handler, builder, resolveChain, ownFrame string) {
	t.Helper()
	lib := "github.com/google/jsonschema-go/jsonschema."
	p := proftest.Folded(map[string]int64{
		handler + ";" + builder + ";encoding/json.Unmarshal;" + lib + "(*Schema).UnmarshalJSON;" + lib +
			"unmarshalStructWithMap[go.shape.struct { Name string }]": 9e8,
		handler + ";" + resolveChain + ";" + lib + "(*Schema).Resolve": 3e8,
	})
	f := analyzers.Finding{Rule: "repeated-schema", OwnFrame: ownFrame,
		Frames: []string{lib + "unmarshalStructWithMap[…]", lib + "(*Schema).UnmarshalJSON", "…", builder, handler}}
	site, ok := HotSite(p, f)
	if !ok || site.Callee != "encoding/json.Unmarshal" || len(site.Frames) == 0 || site.Frames[0].Func != builder {
		t.Fatalf("hot site %+v, %v: want %s's call of encoding/json.Unmarshal", site, ok, builder)
	}
}
