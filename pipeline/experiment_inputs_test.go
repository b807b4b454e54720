package pipeline

import (
	"fmt"
	"strings"
	"testing"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/report"
)

// Inputs are first-class (issue 35): work keyed on a header probe sends
// the same every time costs the same and answers the same for every key,
// so a load-time claim needs the header varied. A catalogue per
// Accept-Language: the other-header variant asks for another language,
// gets another reply, and the work is a function of the language.
func TestExperimentAcceptLanguageTrap(t *testing.T) {
	e, ef, f := trapExperimentOf(t, "a catalogue per Accept-Language", "/catalog", "page", []string{"1", "2", "3"},
		h1.Field{Name: "Accept-Language", Value: "en-GB,en;q=0.9"})
	v := variantNamed(e, "other-header")
	if v == nil || v.Error != "" || v.SameReply || !strings.Contains(v.Request, "Accept-Language: fr") {
		t.Fatalf("other-header: %+v, want another language asked for and another reply", v)
	}
	if couldNotTell(t, ef, f) {
		return
	}
	if ef.Verdict != "replies-with-input" || f.Class != "cacheable" || !strings.Contains(ef.Why, "`Accept-Language`") {
		t.Errorf("verdict %s, class %s, want replies-with-input naming `Accept-Language`: %s", ef.Verdict, f.Class, ef.Why)
	}
}

// A cookie's user: without the cookie the server refuses (401), so the
// without-headers variant is void, says so with its errors, and is no
// evidence: the cookie was never varied, and the claim is at most
// cacheable, the cookie named.
func TestExperimentCookieIdentityTrap(t *testing.T) {
	e, ef, f := trapExperimentOf(t, "a cookie's user's settings", "/me", "page", []string{"1", "2", "3"},
		h1.Field{Name: "Cookie", Value: "user=bob"})
	v := variantNamed(e, "without-headers")
	if v == nil || v.Errors == 0 || v.Calls < v.Errors || !strings.Contains(v.Error, fmt.Sprintf("%d of its %d calls", v.Errors, v.Calls)) ||
		!strings.Contains(v.Error, "401") || strings.Join(v.Varies, ",") != "Cookie" {
		t.Fatalf("without-headers: %+v, want void with its 401s shown", v)
	}
	if couldNotTell(t, ef, f) {
		return
	}
	if ef.Verdict != "inputs-not-varied" || f.Class != "cacheable" || !strings.Contains(ef.Why, "`Cookie` was not varied") ||
		!strings.Contains(ef.Why, "401") {
		t.Errorf("verdict %s, class %s, want inputs-not-varied naming `Cookie` and the void variant's errors: %s", ef.Verdict, f.Class, ef.Why)
	}
}

// The true positive, its inputs varied: constant settings decoded
// whatever the page and whatever the language asked for are still
// load-time once the other-header variant has varied Accept-Language
// with the same reply and the same work.
func TestExperimentLoadTimeWithItsHeaderVaried(t *testing.T) {
	e, f := experimentOf(t, "/config", "page", []string{"1", "2", "3"}, h1.Field{Name: "Accept-Language", Value: "en"})
	ef := e.Findings[0]
	if v := variantNamed(e, "other-header"); v == nil || v.Error != "" || !v.SameReply {
		t.Fatalf("other-header: %+v, want the same reply", v)
	}
	if couldNotTell(t, ef, f) {
		return
	}
	if ef.Verdict != "input-independent" || f.Class != "load-time" || !strings.Contains(ef.Why, "other-header") {
		t.Errorf("verdict %s, class %s, want input-independent with other-header tested: %s", ef.Verdict, f.Class, ef.Why)
	}
}

func variantNamed(e *report.Experiment, name string) *report.ExperimentVariant {
	for i := range e.Variants {
		if e.Variants[i].Name == name {
			return &e.Variants[i]
		}
	}
	return nil
}
