package verdict

import (
	"bytes"
	"crypto/sha256"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
)

// burnSink keeps the hashing from being optimised away.
var burnSink byte

// hashEvery is the work under test: hashing, as a handler's would, until
// the process has used cpu more (so that a busy machine slows it, not
// thins its samples), or a minute has passed.
//
//go:noinline
func hashEvery(cpu time.Duration) {
	b := make([]byte, 4096)
	start := processCPU()
	for until := time.Now().Add(time.Minute); time.Now().Before(until) && processCPU()-start < cpu; {
		for range 64 {
			sum := sha256.Sum256(b)
			burnSink ^= sum[0]
			b[0]++
		}
	}
}

// processCPU is the CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuProfileOf is a real CPU profile of this process while work runs.
func cpuProfileOf(t *testing.T, work func()) *profile.Profile {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.StartCPUProfile(&b); err != nil {
		t.Skipf("a CPU profile is being taken already: %v", err)
	}
	work()
	pprof.StopCPUProfile()
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The work of a function is the CPU of the samples with it on their stack,
// part of all the profile's; a function the profile never ran is none.
// Judged on real profiles, the same work at the same requests stays put
// and the same work over half the requests moves with the input.
func TestJudgeOnRealProfiles(t *testing.T) {
	p := cpuProfileOf(t, func() { hashEvery(2 * time.Second) })
	const fn = "github.com/probehq/probe/analyzers/verdict.hashEvery"
	w, all := workOf(p, fn), CPUOf(p, nil)
	if w.samples < minWorkSamples || w.nanos <= 0 || w.nanos > all {
		t.Fatalf("%s: %d samples, %d ns of %d ns in all", fn, w.samples, w.nanos, all)
	}
	if w.readsRequest {
		t.Errorf("hashing read the request?")
	}
	if none := workOf(p, "github.com/probehq/probe/analyzers/verdict.neverRan"); none.samples != 0 || none.nanos != 0 {
		t.Errorf("a function that never ran: %+v", none)
	}
	f := analyzers.Finding{Rule: "repeated-hash", Class: "info", Frames: []string{fn}}
	variants := func(otherRequests int64) []Variant {
		vs := []Variant{{Name: "same-key", SameReply: true, StableDigest: "d0", ReplyDigest: "d0"},
			{Name: "ignored-param", SameReply: true, StableDigest: "d0", ReplyDigest: "d0", Varies: []string{"probe-experiment"}},
			{Name: "other-key-1", ShouldMatter: true, StableDigest: "d1", ReplyDigest: "d1"}}
		for i := range vs {
			vs[i].Requests, vs[i].SlotRequests = 100, []int64{100}
		}
		vs[2].Requests, vs[2].SlotRequests = otherRequests, []int64{otherRequests}
		return vs
	}
	profiles := [][]*profile.Profile{{p}, {p}, {p}}
	ef := Judge(f, variants(100), profiles, "", false, ReplyEvidence{})
	if ef.Verdict != "input-independent" || ef.Class != "load-time" || ef.Frames[0].Samples[0] != w.samples {
		t.Errorf("the same work at the same requests: %s %s, %d samples: %s", ef.Verdict, ef.Class, ef.Frames[0].Samples[0], ef.Why)
	}
	if ef = Judge(f, variants(50), profiles, "", false, ReplyEvidence{}); ef.Verdict != "moves-with-input" ||
		!strings.Contains(ef.Why, "other-key-1") {
		t.Errorf("twice the work a request for the other key: %s: %s", ef.Verdict, ef.Why)
	}
	// A thin leaf first and the work's outermost frame set: the work is
	// judged under the outermost, the leaf alone would be too few samples.
	leaf := analyzers.Finding{Rule: "repeated-hash", Class: "info", Frames: []string{"github.com/probehq/probe/analyzers/verdict.neverRan"}}
	if ef = Judge(leaf, variants(100), profiles, "", false, ReplyEvidence{}); ef.Verdict != "inconclusive" ||
		!strings.Contains(ef.Why, "too few samples of the work to compare (a longer --experiment-time gives more)") {
		t.Errorf("a leaf of no samples: %s: %s", ef.Verdict, ef.Why)
	}
	leaf.WorkFrame = fn
	if ef = Judge(leaf, variants(100), profiles, "", false, ReplyEvidence{}); ef.Verdict != "input-independent" ||
		ef.Frames[0].Frame != fn || ef.Frames[0].Samples[0] != w.samples {
		t.Errorf("judged under %s: %s, %d samples: %s", ef.Frames[0].Frame, ef.Verdict, ef.Frames[0].Samples[0], ef.Why)
	}
}
