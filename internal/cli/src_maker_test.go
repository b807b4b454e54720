package cli

import (
	"strings"
	"testing"

	"github.com/probehq/probe/report"
)

// The list server's handler encodes the list its maker was given on every
// call: --verify does the encoding once per handler made, in the maker,
// and the variant answers the same for most of the CPU less (it is nearly
// all the handler does, so the saving stands out on a busy machine too).
func TestVerifyDoesAMakersCallOncePerHandlerMade(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two servers and runs 7 loads")
	}
	rep := verified(t, testdataServer("page"), "/list")
	var found bool
	for _, v := range rep.Verification {
		if !strings.HasPrefix(v.Finding, "repeated-json-encode@") || v.Class != "load-time" {
			continue
		}
		found = true
		if v.Form != "once-per-literal" || v.Verdict != report.Confirmed || v.MeasuredSaving == nil ||
			*v.MeasuredSaving < 0.5 || v.RepliesSame == nil || !*v.RepliesSame {
			t.Errorf("%+v: want once-per-literal confirmed, replies the same, a saving above 50%%", v)
		}
	}
	if !found {
		t.Errorf("no load-time verification of the list's encoding: findings %+v, verifications %+v", rep.Findings,
			rep.Verification)
	}
}
