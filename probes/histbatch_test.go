package probes

import (
	"math/rand/v2"
	"testing"

	"github.com/probehq/probe/result"
)

// A batch's histogram, once flushed, is the histogram of the same values
// recorded one by one: at every count, for runs shorter and longer than
// a batch.
func TestHistBatchRecordsEveryValue(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 65, 1000} {
		direct, batched := result.NewHistogram(), result.NewHistogram()
		b := newHistBatch(batched)
		for i := range n {
			v := int64(1 + rand.IntN(2_000_000))
			if i%7 == 0 {
				v = int64(5 * 60 * 1_000_000) // the highest trackable value
			}
			direct.RecordValue(v)
			b.record(v)
		}
		if n >= 64 && batched.TotalCount() == 0 {
			t.Errorf("%d values: a full batch was not recorded before the flush", n)
		}
		b.flush()
		if !direct.Equals(batched) {
			t.Errorf("%d values: %d recorded through the batch, %d directly; p50 %d and %d",
				n, batched.TotalCount(), direct.TotalCount(), batched.ValueAtQuantile(50), direct.ValueAtQuantile(50))
		}
		b.flush()
		if !direct.Equals(batched) {
			t.Errorf("%d values: a second flush recorded again", n)
		}
	}
}
