package analyzers

import (
	"math"
	"testing"
)

func TestSampleTotal(t *testing.T) {
	p := newProfile("cpu").add(5, "a.f").add(7, "a.g").p
	if SampleTotal(p, "cpu") != 12 || !math.IsNaN(SampleTotal(p, "alloc_space")) ||
		!math.IsNaN(SampleTotal(nil, "cpu")) {
		t.Error("totals")
	}
}
