package crash

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The classifier is tested on real deaths of a purpose-built program.
func TestClassifyRealDeaths(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "die")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/die").CombinedOutput(); err != nil {
		t.Fatalf("building the dying program: %v\n%s", err, out)
	}
	for _, tc := range []struct{ how, class string }{
		{"stack-overflow", StackOverflow},
		{"concurrent-map-write", ConcurrentMapWrite},
		{"deadlock", Deadlock},
		{"panic", Panic},
		{"out-of-memory", OutOfMemory},
	} {
		t.Run(tc.how, func(t *testing.T) {
			cmd := exec.Command(bin, tc.how)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			if err == nil {
				t.Fatal("the child lived")
			}
			c, ok := ClassifyExit(err.Error(), stderr.String())
			if !ok || c.Class != tc.class {
				t.Errorf("classified %q (%v) from %s:\n%.400s", c.Class, ok, err, stderr.String())
			}
			if c.Evidence == "" {
				t.Error("no evidence")
			}
			if tc.class == StackOverflow {
				if rec := Recursion(stderr.String()); rec != "main" {
					t.Errorf("recursion in %q, want main", rec)
				}
			}
		})
	}
}

func TestClassifyText(t *testing.T) {
	for _, tc := range []struct{ status, stderr, class string }{
		{"exit status 2", "2026/11/30 05:00:00 http: panic serving 127.0.0.1:5555: boom\ngoroutine 7 [running]:", Panic},
		{"signal: killed", "", OutOfMemory},
		{"exit status 2", "runtime: goroutine stack exceeds 1000000000-byte limit\nruntime: sp=…\nfatal error: stack overflow", StackOverflow},
		{"exit status 2", "fatal error: runtime: cannot allocate memory\n\ngoroutine 1 [running]:", OutOfMemory},
		// A cgo-linked server under a 256 MiB RLIMIT_DATA (probes/fuzz's victim).
		{"exit status 2", "runtime/cgo: pthread_create failed: Resource temporarily unavailable\nSIGABRT: abort\n" +
			"PC=0x7fbf75e2deec m=3 sigcode=18446744073709551610\n", OutOfMemory},
		{"exit status 2", "runtime: failed to create new OS thread (have 9 already; errno=12)\n" +
			"runtime: may need to increase max user processes (ulimit -u)\nfatal error: newosproc\n", OutOfMemory},
	} {
		if c, ok := ClassifyExit(tc.status, tc.stderr); !ok || c.Class != tc.class {
			t.Errorf("%q %q: %q", tc.status, tc.stderr, c.Class)
		}
	}
	if _, ok := ClassifyExit("exit status 0", "bye\n"); ok {
		t.Error("a clean exit was classified")
	}
}
