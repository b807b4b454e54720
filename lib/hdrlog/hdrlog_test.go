package hdrlog

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

var settings = Settings{Lowest: 1, Highest: 300_000_000, Digits: 3}

func filled(values ...int64) *hdrhistogram.Histogram {
	h := hdrhistogram.New(settings.Lowest, settings.Highest, settings.Digits)
	for _, v := range values {
		h.RecordValue(v)
	}
	return h
}

func TestRoundTripIsExact(t *testing.T) {
	start := time.UnixMilli(1_790_000_000_123)
	a, b := filled(1, 7, 1234, 99_999, 250_000_000), filled(3)
	log, err := Encode(start, []Entry{{Tag: "latency/GET /x?a=1,2", Start: start, End: start.Add(time.Second), Histogram: a},
		{Tag: "second/0", Start: start, End: start.Add(time.Second), Histogram: b}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Read(bytes.NewReader(log), settings)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if len(got) != 2 || got[0].Tag != "latency/GET /x?a=1,2" || got[1].Tag != "second/0" {
		t.Fatalf("entries %+v", got)
	}
	if !got[0].Histogram.Equals(a) || !got[1].Histogram.Equals(b) {
		t.Error("a histogram read back differs from the one written")
	}
	if a.Tag() != "" {
		t.Error("Write changed the caller's histogram")
	}
}

func TestBadLogs(t *testing.T) {
	start := time.Now()
	good, _ := Encode(start, []Entry{{Tag: "x", Start: start, End: start, Histogram: filled(5)}})
	coarse, _ := Encode(start, []Entry{{Tag: "x", Start: start, End: start, Histogram: hdrhistogram.New(1, 300_000_000, 1)}})
	lines := strings.Split(string(good), "\n")
	last := lines[len(lines)-2]
	cut := strings.Join(lines[:len(lines)-2], "\n") + "\n" + last[:len(last)-10] + "\n"
	for name, c := range map[string]struct{ log, want string }{
		"garbage":   {"hello\n", "line 1 is not part of a histogram log"},
		"cut":       {cut, "histogram 1"},
		"settings":  {string(coarse), "cannot be added exactly"},
		"no header": {last + "\n", "no format version"},
	} {
		_, err := Read(strings.NewReader(c.log), settings)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", name, err, c.want)
		}
	}
}
