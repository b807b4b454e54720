package fuzz

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/lib/crash"
	"github.com/probehq/probe/result"
)

// fuzzFor searches path on the victim (started with args) for d, with a
// short shrink.
func fuzzFor(t *testing.T, path string, d time.Duration, args ...string) *result.Fuzz {
	t.Helper()
	tmpl, err := ParseTemplate("GET", path, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Options{Templates: []*Template{tmpl}, Start: startVictim(victim(t), 0, args...),
		Concurrency: 2, Duration: d, Timeout: 5 * time.Second, ShrinkTime: 5 * time.Second, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// /notify leaks a goroutine on every negative count: the hunt after the
// search finds it with the one input that does it, the leaked goroutine's
// function named; the process lived, so it is no restart.
func TestFuzzFindsALeak(t *testing.T) {
	if testing.Short() {
		t.Skip("fuzzes a server for seconds")
	}
	res := fuzzFor(t, "/notify?n={int}", 2*time.Second, "-pprof")
	c := onlyCrash(t, res, crash.Leak)
	n, err := strconv.Atoi(c.Input.Values[0])
	if err != nil || n >= 0 {
		t.Errorf("the leak's input %q: want a negative count", c.Input.Values)
	}
	if len(c.Frames) == 0 || c.Frames[0] != "main.notifyWorker" || !strings.Contains(c.Evidence, "left blocked forever by this one "+
		"request") || !strings.Contains(c.Evidence, "chansend") {
		t.Errorf("leak %q at %v: want main.notifyWorker parked sending", c.Evidence, c.Frames)
	}
	if res.LeakHunt != "" {
		t.Errorf("leak hunt: %s", res.LeakHunt)
	}
}

// A server that leaks nothing gets no leak; one that serves no leak
// profile gets the hunt's word for it, and no leak either.
func TestFuzzLeakHuntOnCleanAndUnprofiledServers(t *testing.T) {
	if testing.Short() {
		t.Skip("fuzzes a server for seconds")
	}
	clean := fuzzFor(t, "/echo?s={str}", time.Second, "-pprof")
	for _, c := range clean.Crashes {
		if c.Class == crash.Leak {
			t.Errorf("a leak on a server that leaks nothing: %s %v", c.Evidence, c.Frames)
		}
	}
	unprofiled := fuzzFor(t, "/notify?n={int}", time.Second)
	for _, c := range unprofiled.Crashes {
		if c.Class == crash.Leak {
			t.Errorf("a leak without a leak profile: %s", c.Evidence)
		}
	}
	if !strings.Contains(unprofiled.LeakHunt, "serves no leak profile") || strings.Contains(unprofiled.LeakHunt, "\n") {
		t.Errorf("leak hunt %q: want one line saying the target serves no leak profile", unprofiled.LeakHunt)
	}
}
