package verdict

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/result"
)

// ignoredParam is the pipeline's IgnoredParam, the control's parameter.
const ignoredParam = "probe-experiment"

// The verdict's rules on figures alone: a control that moved is noise, a
// work that reads the request is never load-time, no other key is no test.
func TestExperimentVerdictRules(t *testing.T) {
	vs := func(replies ...bool) []Variant {
		names := []string{"same-key", "ignored-param", "other-key-1"}
		var out []Variant
		for i, same := range replies {
			digest := "d0"
			if !same {
				digest = fmt.Sprintf("d%d", i)
			}
			out = append(out, Variant{Name: names[i], ShouldMatter: i == 2, Requests: 100, SameReply: same,
				StableDigest: digest, ReplyDigest: digest})
		}
		return out
	}
	work := func(ms ...float64) Frame { return workFrame("f", 200, ms...) }
	for _, tc := range []struct {
		name    string
		work    Frame
		vs      []Variant
		reads   string
		verdict string
	}{
		{"stays put", work(1, 1.05, 0.95), vs(true, true, false), "", "input-independent"},
		{"moves", work(1, 1, 2.5), vs(true, true, false), "", "moves-with-input"},
		{"vanishes", work(1, 1, 0), vs(true, true, false), "", "moves-with-input"},
		{"noisy control", work(1, 2, 1), vs(true, true, false), "", "inconclusive"},
		// A control that moved 34% is the noise: an input that moves 7× is
		// still an input that matters; one that moves 50% is not told apart.
		{"noisy control, input far beyond it", work(5.6, 7.5, 0.78), vs(true, true, false), "", "moves-with-input"},
		{"noisy control, input within twice it", work(5.6, 7.5, 8.4), vs(true, true, false), "", "inconclusive"},
		{"reads the request", work(1, 1, 1), vs(true, true, false), "reads", "inconclusive"},
		{"no other key", work(1, 1), vs(true, true), "", "inconclusive"},
		{"same key, other reply", work(1, 1, 1), vs(false, true, false), "", "inconclusive"},
		// A parameter the server reads is an input that matters.
		{"param not ignored, moves", work(1, 3), vs(true, false), "", "moves-with-input"},
	} {
		class, verdict, _, why := verdict("info", tc.work, tc.vs, tc.reads, false, ReplyEvidence{})
		if verdict != tc.verdict {
			t.Errorf("%s: verdict %s (class %s), want %s: %s", tc.name, verdict, class, tc.verdict, why)
		}
		if verdict == "inconclusive" && class != "info" {
			t.Errorf("%s: an inconclusive experiment changed the class to %s", tc.name, class)
		}
	}
	// Work over the reply's bytes (compressing it): a steady cost across
	// keys whose replies differ is not one piece of work, and a request
	// whose replies differ byte for byte makes it per-request; a move
	// over stable replies is still a move.
	over := func(v []Variant, fr Frame) (string, string) {
		_, verdict, _, why := verdict("info", fr, v, "", true, ReplyEvidence{})
		return verdict, why
	}
	if v, why := over(vs(true, true, false), work(1, 1.05, 0.95)); v != "inconclusive" || !strings.Contains(why, "got other bytes") {
		t.Errorf("compressing other keys' replies at a steady cost: verdict %s, want inconclusive: %s", v, why)
	}
	if v, _ := over(vs(true, true, true), work(1, 1.05, 0.95)); v != "input-independent" {
		t.Errorf("compressing one reply for every key: verdict %s, want input-independent", v)
	}
	// Bytes that differ where the stable digest masks them (an id) are
	// other bytes all the same.
	masked := vs(true, true, true)
	masked[2].ReplyDigest = "d9"
	if v, why := over(masked, work(1, 1.05, 0.95)); v != "inconclusive" {
		t.Errorf("compressing replies that differ in a masked id: verdict %s, want inconclusive: %s", v, why)
	}
	// A parameter the server reads, the only input that ran, stamped.
	read := vs(true, false)
	read[1].DistinctReplies = 40
	if v, why := over(read, work(1, 1.05)); v != "inconclusive" {
		t.Errorf("compressing replies to a parameter the server reads, stamped: verdict %s: %s", v, why)
	}
	// An ignored-param whose reply was not kept is no input.
	unkept := vs(true, false, false)
	unkept[1].StableDigest, unkept[1].ReplyDigest = "", ""
	if _, v, _, why := verdict("info", work(1, 4, 1), unkept, "", false, ReplyEvidence{}); v != "input-independent" {
		t.Errorf("an ignored-param with no reply kept, 4× dearer: verdict %s, want input-independent on the other key: %s", v, why)
	}
	stamped := vs(true, true, false)
	stamped[0].DistinctReplies = 40
	if v, why := over(stamped, work(1, 1, 2.5)); v != "inconclusive" || !strings.Contains(why, "byte for byte") {
		t.Errorf("compressing replies stamped per request: verdict %s, want inconclusive: %s", v, why)
	}
	if v, why := over(vs(true, true, false), work(1, 1, 2.5)); v != "moves-with-input" {
		t.Errorf("compressing stable replies whose cost moves with the key: verdict %s: %s", v, why)
	}
	// A third cheaper is as far as a third dearer: 0.71× is a 40% change.
	if _, v, _, why := verdict("info", work(1, 1, 0.71), vs(true, true, false), "", false, ReplyEvidence{}); v != "moves-with-input" {
		t.Errorf("an other key at 0.71×: verdict %s, want moves-with-input: %s", v, why)
	}
	// The bound a move is said to pass is one every move passed.
	two := append(vs(true, true, false), Variant{Name: "other-key-2", ShouldMatter: true, Requests: 8,
		StableDigest: "d3", ReplyDigest: "d3"})
	wt := work(5, 5, 6.75, 15)
	wt.Samples[3] = 24
	if _, v, tol, why := verdict("info", wt, two, "", false,
		ReplyEvidence{}); v != "moves-with-input" || tol > 0.35 || !strings.Contains(why, "beyond ±30%") {
		t.Errorf("two moves of unlike bounds: verdict %s, tolerance %.2f: %s", v, tol, why)
	}
	// A figure that is no number is never staying put.
	if _, v, _, why := verdict("info", work(1, 1, math.NaN()), vs(true, true, false), "", false, ReplyEvidence{}); v != "inconclusive" {
		t.Errorf("a NaN figure: verdict %s, want inconclusive: %s", v, why)
	}
	few := work(1, 1, 1)
	few.Samples[2] = 3
	fewVs := vs(true, true, false)
	fewVs[2].Requests = 2
	if _, v, _, why := verdict("info", few, fewVs, "", false, ReplyEvidence{}); v != "inconclusive" {
		t.Errorf("2 requests of the other key: verdict %s, want inconclusive: %s", v, why)
	}
	// One other key too thin to compare, the next one moved: the input matters.
	mixed := work(1, 1, 1, 3)
	mixedVs := append(vs(true, true, false), Variant{Name: "other-key-2", ShouldMatter: true, Requests: 100})
	mixedVs[2].Requests = 2
	if _, v, _, why := verdict("info", mixed, mixedVs, "", false, ReplyEvidence{}); v != "moves-with-input" {
		t.Errorf("a thin other key beside one that moved: verdict %s, want moves-with-input: %s", v, why)
	}
	// A move seen while other processes used the machine is the
	// machine's as much as the input's: no claim. A quiet machine's is.
	busy := vs(true, true, false)
	busy[2].SlotOthersCores = []float64{0.05, 0.9}
	if _, v, _, why := verdict("info", work(1, 1, 1.42), busy, "", false, ReplyEvidence{}); v != "inconclusive" ||
		!strings.Contains(why, "too noisy to tell") || !strings.Contains(why, "0.90 cores") {
		t.Errorf("a 42%% move on a busy machine: verdict %s, want inconclusive: %s", v, why)
	}
	if _, v, _, why := verdict("info", work(1, 1, 2.5), busy, "", false, ReplyEvidence{}); v != "moves-with-input" ||
		!strings.Contains(why, "0.90 cores") || !strings.Contains(why, "beyond ±100%") {
		t.Errorf("a 2.5× move on a busy machine: verdict %s, want moves-with-input past ±100%%: %s", v, why)
	}
	busy[2].SlotOthersCores = []float64{0.05, 0.2}
	if _, v, _, why := verdict("info", work(1, 1, 1.42), busy, "", false, ReplyEvidence{}); v != "moves-with-input" {
		t.Errorf("a 42%% move on a quiet machine: verdict %s, want moves-with-input: %s", v, why)
	}
	// Busy seconds left out: the figures rest on the quiet ones left (one
	// a variant under the race detector, its spread unknown), measured
	// while the machine was busy. No claim under ×2 either (CI: a 69%
	// move of input-independent work, one second a variant).
	busy[2].SlotOthersCores, busy[2].BusySecondsLeftOut = []float64{0.2}, 2
	if _, v, _, why := verdict("info", work(1, 1, 1.69), busy, "", false, ReplyEvidence{}); v != "inconclusive" ||
		!strings.Contains(why, "in 2 of the experiment's seconds (left out of the figures") {
		t.Errorf("a 69%% move with busy seconds left out: verdict %s, want inconclusive: %s", v, why)
	}
	gone := work(1, 1, 0)
	gone.Samples[2] = 0
	if _, v, _, why := verdict("info", gone, vs(true, true, false), "", false, ReplyEvidence{}); v != "moves-with-input" {
		t.Errorf("the work gone from the other key: verdict %s, want moves-with-input: %s", v, why)
	}
}

// Nonces and timestamps are masked; what the request varies is not.
func TestStableDigest(t *testing.T) {
	a := StableDigest([]byte("page 1, nonce 0f1e2d3c4b5a6978 at 2026-12-01T13:43:23Z"))
	b := StableDigest([]byte("page 1, nonce a0b1c2d3e4f50617 at 2026-12-01T13:44:01Z"))
	c := StableDigest([]byte("page 2, nonce a0b1c2d3e4f50617 at 2026-12-01T13:44:01Z"))
	if a != b || a == c {
		t.Errorf("digests %s %s %s: want the first two equal, the third apart", a, b, c)
	}
}

// The seconds' own noise widens what counts as a move, never what counts
// as staying put. The figures of a CI run where constant work's
// other-key-2 came out 32% above the base on a busy runner: with seconds
// as unlike each other as they were there, that is noise (inconclusive,
// where a fixed 30% called it a move); with steady seconds, a move.
func TestExperimentSecondsNoise(t *testing.T) {
	type variant struct {
		name    string
		matters bool
		slots   []float64 // CPU per request of each second, ms
		reqs    []int64
		samples int
	}
	run := func(vars []variant) (string, string, float64) {
		var vs []Variant
		fr := Frame{Frame: "encoding/json.Unmarshal"}
		for _, v := range vars {
			ev := Variant{Name: v.name, ShouldMatter: v.matters, SameReply: !v.matters, SlotRequests: v.reqs}
			var ms float64
			for k, x := range v.slots {
				ev.Requests += v.reqs[k]
				ms += x * float64(v.reqs[k])
			}
			vs = append(vs, ev)
			fr.CPUPerRequestMS = append(fr.CPUPerRequestMS, ms/float64(ev.Requests))
			fr.Samples = append(fr.Samples, v.samples)
			fr.SlotCPUPerRequestMS = append(fr.SlotCPUPerRequestMS, v.slots)
		}
		_, verdict, tol, why := verdict("info", fr, vs, "", false, ReplyEvidence{})
		return verdict, why, tol
	}
	scaled := func(vars []variant, f func(i int, slots []float64) []float64) []variant {
		out := slices.Clone(vars)
		for i := range out {
			out[i].slots = f(i, slices.Clone(out[i].slots))
		}
		return out
	}
	ci := []variant{
		{"same-key", false, []float64{13.5, 15.7, 17.9}, []int64{43, 44, 43}, 200},
		{"ignored-param", false, []float64{16.2, 18.9, 21.6}, []int64{33, 32, 33}, 184},
		{"other-key-1", true, []float64{16.6, 19.5, 22.4}, []int64{33, 32, 33}, 188},
		{"other-key-2", true, []float64{19.5, 25.5}, []int64{36, 36}, 161},
	}
	if v, why, _ := run(ci); v != "inconclusive" || !strings.Contains(why, "too noisy to tell") || !strings.Contains(why, "other-key-2") ||
		!strings.Contains(why, "a longer --experiment-time") {
		t.Errorf("seconds ±15%% apart, other-key-2 32%% off: verdict %s, want inconclusive, too noisy: %s", v, why)
	}
	// The same means, each second at its variant's figure.
	steady := scaled(ci, func(_ int, slots []float64) []float64 {
		m := (slots[0] + slots[len(slots)-1]) / 2
		for k := range slots {
			slots[k] = m
		}
		return slots
	})
	if v, why, _ := run(steady); v != "moves-with-input" {
		t.Errorf("steady seconds: verdict %s, want moves-with-input: %s", v, why)
	}
	// Noisy seconds never let a change beyond 30% pass as staying put:
	// work a third dearer for the other keys, seconds ±12% apart.
	dearer := []variant{
		{"same-key", false, []float64{10.1, 11.5, 12.9}, []int64{40, 40, 40}, 200},
		{"ignored-param", false, []float64{10.6, 12, 13.4}, []int64{40, 40, 40}, 200},
		{"other-key-1", true, []float64{13.4, 17.1}, []int64{40, 40}, 150},
		{"other-key-2", true, []float64{13.9, 17.6}, []int64{40, 40}, 150},
	}
	if v, why, _ := run(dearer); v == "input-independent" {
		t.Errorf("work a third dearer for other keys was called input-independent: %s", why)
	}
	// Constant work on the same noisy seconds is still told constant.
	constant := scaled(dearer, func(i int, slots []float64) []float64 {
		if i >= 2 {
			for k := range slots {
				slots[k] /= 1.3
			}
		}
		return slots
	})
	if v, why, tol := run(constant); v != "input-independent" || tol != minTolerance {
		t.Errorf("constant work, seconds ±12%% apart: verdict %s within ±%.0f%%, want input-independent within ±30%%: %s", v, 100*tol, why)
	}
	// Seconds ±40% apart leave nothing to compare: too noisy, said so.
	wild := scaled(ci, func(_ int, slots []float64) []float64 {
		m := slots[0]
		return []float64{m * 0.6, m * 1.4, m}[:len(slots)]
	})
	if v, why, _ := run(wild); v != "inconclusive" || !strings.Contains(why, "too noisy to tell") {
		t.Errorf("seconds ±40%% apart: verdict %s, want inconclusive, too noisy: %s", v, why)
	}
	// On the same seconds, an input four times dearer is a move: the
	// noise the seconds showed does not hide one beyond it.
	far := slices.Clone(wild)
	far[2].slots = []float64{4 * 16.6 * 0.6, 4 * 16.6 * 1.4, 4 * 16.6}
	if v, why, _ := run(far); v != "moves-with-input" {
		t.Errorf("seconds ±40%% apart, an input 4× dearer: verdict %s, want moves-with-input: %s", v, why)
	}
	// A control that moved as far as the input is noise, however noisy
	// its seconds: the input must move twice as far.
	both := slices.Clone(far)
	both[1].slots = []float64{4 * 16.2 * 0.6, 4 * 16.2 * 1.4, 4 * 16.2}
	if v, why, _ := run(both); v == "moves-with-input" || v == "input-independent" {
		t.Errorf("a control that moved as far as the input: verdict %s, want inconclusive: %s", v, why)
	}
	// A variant whose work all but vanished has seconds of sampling noise
	// only: they do not make the others' comparison noisy.
	vanished := slices.Clone(steady)
	vanished[2] = variant{"other-key-1", true, []float64{0, 0.25, 0}, []int64{40, 40, 40}, 1}
	vanished[3].slots = []float64{22, 23}
	if v, why, _ := run(vanished); v != "moves-with-input" {
		t.Errorf("a vanished work beside a moved one: verdict %s, want moves-with-input: %s", v, why)
	}
}

// turnsExperiment is constant work (or work dearer times dearer for the
// other keys) measured in turns whose machine ran at speeds, each second
// times noise(i, k); short is the variant without the last turn (-1:
// none); turns: the seconds' turns are known.
func turnsExperiment(names []string, speeds []float64, dearer float64, short int, turns bool,
	noise func(i, k int) float64) (Frame, []Variant) {
	var vs []Variant
	fr := Frame{Frame: "encoding/json.Unmarshal"}
	for i, name := range names {
		v := Variant{Name: name, ShouldMatter: i >= 2, SameReply: i < 2}
		var slots []float64
		var ms float64
		for k, speed := range speeds {
			if i == short && k == len(speeds)-1 {
				continue
			}
			x := 10 * speed * noise(i, k)
			if i >= 2 {
				x *= dearer
			}
			slots = append(slots, x)
			v.SlotRequests = append(v.SlotRequests, 40)
			if turns {
				v.SlotRounds = append(v.SlotRounds, k)
			}
			v.Requests += 40
			ms += 40 * x
		}
		vs = append(vs, v)
		fr.CPUPerRequestMS = append(fr.CPUPerRequestMS, ms/float64(v.Requests))
		fr.Samples = append(fr.Samples, 50*len(slots))
		fr.SlotCPUPerRequestMS = append(fr.SlotCPUPerRequestMS, slots)
	}
	return fr, vs
}

// The variants take turns, a second each: a turn in which the machine ran
// slow slows every variant alike. With the turns known, constant work on
// a machine whose speed swung ±40% from turn to turn is told constant (the
// variants' own seconds call it too noisy), a work 60% dearer for the
// other keys is told a move, and a variant short of the slowest turn, an
// input's or a control's, is compared on the turns it had, not on a mean
// the missing turn lowers. Turns that did not matter are not used.
func TestExperimentTurnsTakeTheMachineOut(t *testing.T) {
	names := []string{"same-key", "ignored-param", "other-key-1", "other-key-2"}
	pattern := []float64{1.03, 0.97, 1.01, 0.99, 1.02, 0.98, 1.0, 1.04, 0.96, 1.0, 1.03, 0.97, 0.98, 1.02, 1.01}
	fixed := func(i, k int) float64 { return pattern[(4*k+i)%len(pattern)] }
	run := func(speeds []float64, dearer float64, short int, turns bool) (string, string) {
		fr, vs := turnsExperiment(names, speeds, dearer, short, turns, fixed)
		_, verdict, _, why := verdict("info", fr, vs, "", false, ReplyEvidence{})
		return verdict, why
	}
	swing := []float64{1, 0.6, 1.4}
	if v, why := run(swing, 1, -1, false); v != "inconclusive" || !strings.Contains(why, "too noisy to tell") {
		t.Errorf("constant work, turns ±40%%, the turns not known: verdict %s, want inconclusive, too noisy: %s", v, why)
	}
	if v, why := run(swing, 1, -1, true); v != "input-independent" || !strings.Contains(why, "turn for turn") {
		t.Errorf("constant work, turns ±40%% known: verdict %s, want input-independent, compared turn for turn: %s", v, why)
	}
	if v, why := run(swing, 1.6, -1, true); v != "moves-with-input" {
		t.Errorf("work 60%% dearer for the other keys, turns known: verdict %s, want moves-with-input: %s", v, why)
	}
	slowLast := []float64{1, 1, 2}
	for _, short := range []int{1, 3} {
		if v, why := run(slowLast, 1, short, true); v != "input-independent" {
			t.Errorf("constant work, %s short of the slow last turn: verdict %s, want input-independent: %s", names[short], v, why)
		}
	}
	// Each turn holds the same noises, so the turns explain nothing.
	even := func(i, k int) float64 { return []float64{1.05, 0.95, 1.02, 0.98}[(i+k)%4] }
	fr, vs := turnsExperiment(names, []float64{1, 1, 1}, 1, -1, true, even)
	if _, v, _, why := verdict("info", fr, vs, "", false, ReplyEvidence{}); v != "input-independent" || strings.Contains(why, "turn for turn") {
		t.Errorf("turns of no effect: verdict %s, want input-independent, the seconds pooled: %s", v, why)
	}
	if _, v, _, why := verdict("info", Frame{Frame: "x"}, nil, "", false, ReplyEvidence{}); v != "inconclusive" {
		t.Errorf("no variant: verdict %s, want inconclusive: %s", v, why)
	}
}

// Constant work measured on a busy machine — turns ±40% apart, each
// second ±20% — is called a move in few experiments (each input at 99%,
// three of them), and work 1.6× dearer for the other keys in most: the
// margin is read as a change is, the variance of each comparison exact
// with a turn missing.
func TestExperimentTurnsCallFewFalseMoves(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	names := []string{"same-key", "ignored-param", "other-key-1", "other-key-2", "other-key-3"}
	const trials = 2000
	rate := func(dearer float64) float64 {
		moves := 0
		for range trials {
			speeds := make([]float64, 4)
			for k := range speeds {
				speeds[k] = math.Exp(0.4 * (2*r.Float64() - 1))
			}
			noise := func(i, k int) float64 { return math.Exp(0.2 * r.NormFloat64()) }
			fr, vs := turnsExperiment(names, speeds, dearer, 4, true, noise)
			if _, v, _, _ := verdict("info", fr, vs, "", false, ReplyEvidence{}); v == "moves-with-input" {
				moves++
			}
		}
		return float64(moves) / trials
	}
	falseMoves, moves := rate(1), rate(1.6)
	t.Logf("moves: constant work %.3f, 1.6× dearer %.3f", falseMoves, moves)
	if got := falseMoves; got > 0.03 {
		t.Errorf("constant work called a move in %.3f of the experiments, want at most 0.03 (three inputs at 99%%)", got)
	}
	if got := moves; got < 0.8 {
		t.Errorf("work 1.6× dearer called a move in %.3f of the experiments, want most", got)
	}
}

// The verdict's rule on inputs: every input header of the request varied
// by a variant that stayed put with the same reply, or the claim is at
// most cacheable with the header named; a void variant varies nothing; a
// header variant alone is no other key.
func TestExperimentVerdictNeedsEveryInputVaried(t *testing.T) {
	vs := func(headerErr string) []Variant {
		out := []Variant{{Name: "same-key", SameReply: true, StableDigest: "d0", ReplyDigest: "d0"},
			{Name: "ignored-param", SameReply: true, StableDigest: "d0", ReplyDigest: "d0", Varies: []string{ignoredParam}},
			{Name: "other-key-1", ShouldMatter: true, StableDigest: "d1", ReplyDigest: "d1"},
			{Name: "without-headers", ShouldMatter: true, SameReply: true, StableDigest: "d0", ReplyDigest: "d0", Varies: []string{"Cookie"},
				Error: headerErr}}
		for i := range out {
			out[i].Requests = 100
		}
		return out
	}
	work := Frame{Frame: "f", CPUPerRequestMS: []float64{1, 1.02, 0.98, 1.01}, Samples: []int{200, 200, 200, 200}}
	cookie := ReplyEvidence{Inputs: []string{"Cookie"}}
	if class, v, _, why := verdict("info", work, vs(""), "", false, cookie); v != "input-independent" || class != "load-time" {
		t.Errorf("the cookie varied, the same reply and work: %s %s: %s", class, v, why)
	}
	void := "void: 300 of its 300 calls got errors (300× HTTP status 401), and void evidence is no evidence"
	class, v, _, why := verdict("info", work, vs(void), "", false, cookie)
	if v != "inputs-not-varied" || class != "cacheable" || !strings.Contains(why, "`Cookie` was not varied") || !strings.Contains(why,
		"HTTP status 401") {
		t.Errorf("the cookie's variant void: %s %s: %s", class, v, why)
	}
	if strings.Contains(why, "without-headers 1.0") {
		t.Errorf("a void variant's figures were given as evidence: %s", why)
	}
	// No variant varies the header at all.
	if class, v, _, why := verdict("info", work, vs(void)[:3], "", false,
		ReplyEvidence{Inputs: []string{"X-Tenant"}}); v != "inputs-not-varied" ||
		class != "cacheable" || !strings.Contains(why, "`X-Tenant` was not varied") {
		t.Errorf("a header no variant varies: %s %s: %s", class, v, why)
	}
	// A header variant that stayed put is no other key: the request's own
	// input was never varied.
	noKey := append(vs("")[:2], vs("")[3])
	if _, v, _, why := verdict("info", Frame{Frame: "f", CPUPerRequestMS: []float64{1, 1, 1}, Samples: []int{200, 200, 200}},
		noKey, "", false, cookie); v != "inconclusive" {
		t.Errorf("only the header varied: %s: %s", v, why)
	}
	// A void same-key voids the experiment.
	broken := vs("")
	broken[0].Error = "void: 3 of its requests failed (3× timeout)"
	if _, v, _, _ := verdict("info", work, broken, "", false, ReplyEvidence{}); v != "inconclusive" {
		t.Errorf("a void same-key: %s", v)
	}
}

// An argument no variant varies (a boolean) keeps the claim at most
// cacheable, named; other-value that stayed put is an input variant of
// its own (no other key needed) and varies the strings and numbers.
func TestExperimentVerdictNeedsEveryArgumentVaried(t *testing.T) {
	vs := []Variant{{Name: "same-key", SameReply: true, StableDigest: "d0", ReplyDigest: "d0"},
		{Name: "ignored-field", SameReply: true, StableDigest: "d0", ReplyDigest: "d0", Varies: []string{"arguments.probe-experiment"}},
		{Name: "other-value", ShouldMatter: true, SameReply: true, StableDigest: "d0", ReplyDigest: "d0", Varies: []string{"arguments.lang"}}}
	for i := range vs {
		vs[i].Requests = 100
	}
	work := Frame{Frame: "f", CPUPerRequestMS: []float64{1, 1.02, 0.99}, Samples: []int{200, 200, 200}}
	if class, v, _, why := verdict("cacheable", work, vs, "", false,
		ReplyEvidence{Inputs: []string{"arguments.lang"}}); v != "input-independent" ||
		class != "load-time" {
		t.Errorf("every argument varied, the same reply and work: %s %s: %s", class, v, why)
	}
	class, v, _, why := verdict("cacheable", work, vs, "", false, ReplyEvidence{Inputs: []string{"arguments.lang", "arguments.verbose"}})
	if v != "inputs-not-varied" || class != "cacheable" || !strings.Contains(why, "`arguments.verbose` was not varied") {
		t.Errorf("a boolean argument not varied: %s %s: %s", class, v, why)
	}
	voided := slices.Clone(vs)
	voided[2].Error = "void: 80 of its 80 calls got errors (80× MCP tool error (isError): no such language), and void evidence is no evidence"
	class, v, _, why = verdict("cacheable", work, voided, "", false, ReplyEvidence{Inputs: []string{"arguments.lang"}})
	if v == "input-independent" || class == "load-time" {
		t.Errorf("other-value void, yet: %s %s: %s", class, v, why)
	}
}

// The requests in flight when the variant changes are served in the next
// variant's second: when they are a large part of a second, the seconds
// cannot tell the variants' work apart.
func TestExperimentSpillOver(t *testing.T) {
	vs := []Variant{{Name: "same-key", SameReply: true, StableDigest: "d0", ReplyDigest: "d0", Requests: 525,
		SlotRequests: []int64{175, 175, 175}},
		{Name: "other-value", ShouldMatter: true, StableDigest: "d1", ReplyDigest: "d1", Requests: 600, SlotRequests: []int64{300, 300}}}
	work := Frame{Frame: "f", CPUPerRequestMS: []float64{1.8, 0.9}, Samples: []int{70, 52}}
	_, v, _, why := verdict("cacheable", work, vs, "", false, ReplyEvidence{InFlight: 32})
	if v != "inconclusive" || !strings.Contains(why, "32 in flight") {
		t.Errorf("32 clients at 175 calls a second: %s: %s", v, why)
	}
	if _, v, _, why := verdict("cacheable", work, vs, "", false, ReplyEvidence{InFlight: 4}); v != "moves-with-input" {
		t.Errorf("4 clients at 175 calls a second: %s: %s", v, why)
	}
}

// The experiment's closed loop keeps what is in flight at a change of
// variant under the spill-over guard when the main run's rate says the
// server was saturated: fewer clients, never more, never none.
func TestExperimentClients(t *testing.T) {
	run := func(calls int64, setup int64) *result.Run {
		return &result.Run{Duration: 3 * time.Second, Ops: []*result.OpStats{{Name: "initialize", Setup: true, Calls: setup},
			{Name: "call", Calls: calls}}}
	}
	for _, c := range []struct {
		calls, setup  int64
		clients, want int
	}{
		{69, 0, 4, 1},        // 23 a second: one client is 4% of a second
		{525, 0, 32, 13},     // 175 a second: 32 clients were 18%, 13 are 7%
		{30000, 0, 4, 4},     // 10,000 a second: the main run's 4
		{69, 30000000, 4, 1}, // set-up calls count for nothing
		{0, 0, 8, 8},         // nothing measured: the main run's
	} {
		if got := Clients(run(c.calls, c.setup), c.clients); got != c.want {
			t.Errorf("%d calls in 3 s from %d clients: %d clients, want %d", c.calls, c.clients, got, c.want)
		}
	}
	if got := Clients(&result.Run{Ops: []*result.OpStats{{Calls: 10}}}, 4); got != 4 {
		t.Errorf("no duration: %d clients, want the main run's 4", got)
	}
}

// A call of no input (an MCP tool called with {}) has nothing to vary:
// its work, the same reply every time, is load-time without another key.
func TestVerdictCallWithoutInput(t *testing.T) {
	vs := []Variant{{Name: "same-key", SameReply: true, StableDigest: "d0", ReplyDigest: "d0", Requests: 100},
		{Name: "ignored-field", Error: "void: 80 of its 80 calls got errors (80× MCP tool error (isError): unexpected additional properties)",
			Varies: []string{"arguments.probe-experiment"}}}
	work := Frame{Frame: "f", CPUPerRequestMS: []float64{1, 0}, Samples: []int{200, 0}}
	if class, v, _, why := verdict("cacheable", work, vs, "", false,
		ReplyEvidence{NoInput: true}); v != "input-independent" || class != "load-time" ||
		!strings.Contains(why, "no input to vary") {
		t.Errorf("no input: %s %s: %s", class, v, why)
	}
	if _, v, _, why := verdict("cacheable", work, vs, "", false, ReplyEvidence{}); v != "inconclusive" {
		t.Errorf("input never varied: %s: %s", v, why)
	}
}

// Work invariant by nature that the profile showed given no input, on
// requests whose replies differ: a steady cost across inputs is a
// constant (load-time, whatever the replies did); a cost that moved, or no
// telling, leaves it cacheable.
func TestSteadyCostSettlesAnInvariantClaim(t *testing.T) {
	pending := "parsing templates …; so probe claims it at most cacheable " + analyzers.InvariantPending
	for _, tc := range []struct {
		name, verdict, class string
	}{
		{"stayed, other replies", "replies-with-input", "load-time"},
		{"stayed, same replies", "input-independent", "load-time"},
		{"stayed, a header not varied", "inputs-not-varied", "load-time"},
		{"moved", "moves-with-input", "cacheable"},
		{"could not tell", "inconclusive", "cacheable"},
	} {
		ef := Finding{Class: "cacheable", Verdict: tc.verdict, Tolerance: 0.3,
			Why: "the experiment: … CPU per request of text/template.(*Template).Parse: same-key 1.0 ms"}
		if tc.verdict == "input-independent" {
			ef.Class = "load-time"
		}
		steady(&ef)
		f := analyzers.Finding{Class: "cacheable", Evidence: pending}
		Apply(&f, ef, nil)
		if f.Class != tc.class {
			t.Errorf("%s: class %s, want %s (%s)", tc.name, f.Class, tc.class, ef.Why)
		}
		if tc.class == "load-time" && (ef.Verdict != "steady-cost" || !strings.Contains(ef.Why, "CPU per request of text/template")) {
			t.Errorf("%s: verdict %s: %s", tc.name, ef.Verdict, ef.Why)
		}
	}
}

// workFrame is the frame name's work in an experiment whose variants cost
// ms per request each, over samples CPU samples each.
func workFrame(name string, samples int, ms ...float64) Frame {
	fr := Frame{Frame: name}
	for _, m := range ms {
		fr.CPUPerRequestMS = append(fr.CPUPerRequestMS, m)
		fr.Samples = append(fr.Samples, samples)
	}
	return fr
}
