package pprofio

import (
	"bytes"
	"compress/gzip"
	"errors"
	"runtime/pprof"
	"strings"
	"testing"
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
	p, kept, err := Read(bytes.NewReader(raw), 0)
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
	if _, _, err := Read(zeros{}, 1<<20); !errors.As(err, &tooLarge) || tooLarge.What != "read" || !strings.Contains(err.Error(), "over 1.0 MiB as sent") {
		t.Errorf("endless: %v", err)
	}
	// A gzip bomb: 16 MiB of zeros in some 16 KiB.
	bomb := gzipOf(t, make([]byte, 16<<20))
	if _, _, err := Read(bytes.NewReader(bomb), 1<<20); !errors.As(err, &tooLarge) || tooLarge.What != "decompressed" || !strings.Contains(err.Error(), "gzip bomb") {
		t.Errorf("bomb (%d bytes): %v", len(bomb), err)
	}
	// Gzip inside gzip would be decompressed by profile.ParseData unbounded.
	if _, err := Parse(gzipOf(t, gzipOf(t, make([]byte, 1<<20))), 4<<20); err == nil || !strings.Contains(err.Error(), "gzip inside gzip") {
		t.Errorf("nested: %v", err)
	}
	if _, err := Parse([]byte("not a profile at all"), 0); err == nil || !strings.HasPrefix(err.Error(), "not a pprof profile") {
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
		p, err := Parse(b, 1<<20)
		if err == nil && p == nil {
			t.Fatal("no profile and no error")
		}
	})
}
