package pprofio

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"math"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// realProfile is a heap profile of this test process, gzip as Go writes it.
func realProfile(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&b, 0); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gzipOf(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(b)
	zw.Close()
	return out.Bytes()
}

// zeros is an endless source that costs no memory.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestReadsARealProfile(t *testing.T) {
	raw := realProfile(t)
	p, kept, _, err := Read(bytes.NewReader(raw), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(kept, raw) || len(p.SampleType) == 0 {
		t.Errorf("kept %d of %d bytes, %d sample types", len(kept), len(raw), len(p.SampleType))
	}
}

func TestBoundsSayWhichWasHit(t *testing.T) {
	var tooLarge *TooLargeError
	// An endless reply: read no more than the limit and one byte.
	if _, _, _, err := Read(zeros{}, 1<<20); !errors.As(err, &tooLarge) || tooLarge.What != "read" || !strings.Contains(err.Error(),
		"over 1.0 MiB as sent") {
		t.Errorf("endless: %v", err)
	}
	// A gzip bomb: 16 MiB of zeros in some 16 KiB.
	bomb := gzipOf(t, make([]byte, 16<<20))
	if _, _, _, err := Read(bytes.NewReader(bomb), 1<<20); !errors.As(err,
		&tooLarge) || tooLarge.What != "decompressed" || !strings.Contains(err.Error(), "gzip bomb") {
		t.Errorf("bomb (%d bytes): %v", len(bomb), err)
	}
	// Gzip inside gzip would be decompressed by profile.ParseData unbounded.
	if _, _, err := Parse(gzipOf(t, gzipOf(t, make([]byte, 1<<20))), 4<<20); err == nil || !strings.Contains(err.Error(), "gzip inside gzip") {
		t.Errorf("nested: %v", err)
	}
	if _, _, err := Parse([]byte("not a profile at all"), 0); err == nil || !strings.HasPrefix(err.Error(), "not a pprof profile") {
		t.Errorf("garbage: %v", err)
	}
}

// FuzzParse: whatever bytes come, Parse returns a profile or an error within
// its bounds; it never panics.
func FuzzParse(f *testing.F) {
	f.Add(realProfile(f))
	f.Add(gzipOf(f, []byte("x")))
	f.Add([]byte{0x1f, 0x8b})
	f.Add([]byte("--- heap profile"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, _, err := Parse(b, 1<<20)
		if err == nil && p == nil {
			t.Fatal("no profile and no error")
		}
		for _, s := range sampleValues(p) {
			if s < 0 {
				t.Fatalf("a value %d below zero was kept", s)
			}
		}
	})
}

func sampleValues(p *profile.Profile) []int64 {
	var out []int64
	if p != nil {
		for _, s := range p.Sample {
			out = append(out, s.Value...)
		}
	}
	return out
}

// cpuProfile is a CPU profile of one sample a value, each of its own
// one-frame stack.
func cpuProfile(values ...int64) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}}
	for i, v := range values {
		fn := &profile.Function{ID: uint64(i + 1), Name: fmt.Sprintf("main.f%d", i)}
		loc := &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: fn}}}
		p.Function, p.Location = append(p.Function, fn), append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{1, v}})
	}
	return p
}

func encode(t testing.TB, p *profile.Profile) []byte {
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A sample of a negative value, or of one that carries its type's total
// past an int64, is dropped and said; the rest is kept as it was.
func TestInvalidValuesAreDropped(t *testing.T) {
	const big = (math.MaxInt64 - 5_000_000_000) / 2 // two fit beside 5e9, not three
	p, invalid, err := Parse(encode(t, cpuProfile(3e9, -1e9, 2e9, big, big, big, -5)), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := sampleValues(p); !slices.Equal(got, []int64{1, 3e9, 1, 2e9, 1, big, 1, big}) {
		t.Errorf("kept %v", got)
	}
	want := "dropped 2 samples of a negative cpu value, 1 sample whose cpu value carries the total past 2^63 (no profiler " +
		"writes such values)"
	if invalid != want {
		t.Errorf("said %q, want %q", invalid, want)
	}
	if _, invalid, err := Parse(encode(t, cpuProfile(1, 2)), 0); err != nil || invalid != "" {
		t.Errorf("a valid profile: %q %v", invalid, err)
	}
}

// oneFrame is a CPU profile of n samples of one frame each, all at one
// location (n samples as the attack sends them: ~10 bytes each) and of
// one sample through m locations of one function.
func oneFrame(n, m int) *profile.Profile {
	p := cpuProfile(1)
	for range n - 1 {
		p.Sample = append(p.Sample, &profile.Sample{Location: p.Sample[0].Location, Value: []int64{1, 1}})
	}
	for i := range m - 1 {
		loc := &profile.Location{ID: uint64(i + 2), Line: p.Location[0].Line}
		p.Location = append(p.Location, loc)
		p.Sample[0].Location = append(p.Sample[0].Location, loc)
	}
	return p
}

// A profile of more samples or locations than its limit allows (one per
// 32 bytes) is refused before it is parsed, saying the bound.
func TestTooManySamples(t *testing.T) {
	raw := encode(t, oneFrame(200, 1))
	var tooMany *TooManyError
	if _, _, err := Parse(raw, 2048); !errors.As(err, &tooMany) || tooMany.What != "samples" || tooMany.Limit != 64 ||
		err.Error() != "profile holds over 64 samples (one per 32 bytes of --max-profile 2.0 KiB: raise it)" {
		t.Errorf("200 samples, 64 allowed: %v", err)
	}
	if _, _, err := Parse(raw, 32*200); err != nil {
		t.Errorf("200 samples, 200 allowed: %v", err)
	}
	if _, _, err := Parse(encode(t, oneFrame(1, 200)), 4096); !errors.As(err, &tooMany) || tooMany.What != "locations" {
		t.Errorf("200 locations, 128 allowed: %v", err)
	}
	if got := MaxEntries(0); got != 1<<20 {
		t.Errorf("the default allows %d", got)
	}
}
