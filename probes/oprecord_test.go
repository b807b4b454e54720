package probes

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/probehq/probe/result"
)

// An operation's record, on time or late, merges to exactly the
// histograms of recording every call's latency and service time apart.
func TestOpRecordMergesToBothFiguresOfEveryCall(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rec := &opRecord{onTime: newHistBatch(result.NewHistogram())}
	want := &result.OpStats{Latency: result.NewHistogram(), Service: result.NewHistogram()}
	base := time.Unix(1000, 0)
	for k := range 5000 {
		due := base.Add(time.Duration(k) * time.Millisecond)
		sent := due
		if k%3 == 0 { // behind the schedule
			sent = due.Add(time.Duration(rng.IntN(50_000)) * time.Microsecond)
		}
		done := sent.Add(time.Duration(1+rng.IntN(200_000)) * time.Microsecond)
		rec.record(due, sent, done)
		want.Calls++
		want.Latency.RecordValue(max(1, done.Sub(due).Microseconds()))
		want.Service.RecordValue(max(1, done.Sub(sent).Microseconds()))
	}
	got := &result.OpStats{Latency: result.NewHistogram(), Service: result.NewHistogram()}
	rec.mergeTo(got)
	if got.Calls != want.Calls || !got.Latency.Equals(want.Latency) || !got.Service.Equals(want.Service) {
		t.Fatalf("calls %d, latency p99 %d (want %d), service p99 %d (want %d)", got.Calls,
			got.Latency.ValueAtQuantile(99), want.Latency.ValueAtQuantile(99),
			got.Service.ValueAtQuantile(99), want.Service.ValueAtQuantile(99))
	}
	if rec.lateLatency == nil || rec.onTime.h.TotalCount() == 0 {
		t.Fatal("the test did not take both paths")
	}
}
