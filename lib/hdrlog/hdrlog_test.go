package hdrlog

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
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

// endless is a log that never ends: its head, then line forever; it counts
// the bytes it gave.
type endless struct {
	head, line string
	given      int64
	buf        []byte
}

func (e *endless) Read(p []byte) (int, error) {
	for len(e.buf) < len(p) {
		if e.head != "" {
			e.buf, e.head = append(e.buf, e.head...), ""
		}
		e.buf = append(e.buf, e.line...)
	}
	n := copy(p, e.buf)
	e.buf = e.buf[n:]
	e.given += int64(n)
	return n, nil
}

func logParts(t *testing.T, entries ...Entry) (head, lines string) {
	t.Helper()
	log, err := Encode(time.UnixMilli(1_790_000_000_000), entries)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(log), "Tag=")
	return string(log[:i]), string(log[i:])
}

// A log of one histogram line repeated without end is refused at the
// second, having read no more than a buffer past it; a log of distinct
// tags without end stops at the histogram cap; a log of comments without
// end stops at the byte cap. Each stops reading there, whatever follows.
func TestReadStopsAtItsBounds(t *testing.T) {
	start := time.UnixMilli(1_790_000_000_000)
	head, line := logParts(t, Entry{Tag: "latency/x", Start: start, End: start, Histogram: filled(5)})
	r := &endless{head: head, line: line}
	decoded := 0
	err := ReadEach(r, settings, Limits{}, func(Entry) error { decoded++; return nil })
	if err == nil || !strings.Contains(err.Error(), `tag "latency/x" a second time`) || decoded != 1 || r.given > 1<<20 {
		t.Errorf("a repeated tag: %v, %d decoded, %d bytes read", err, decoded, r.given)
	}

	n := 0
	tags := &endless{head: head}
	tags.line = line
	// Distinct tags: each line a new one.
	gen := readerFunc(func(p []byte) (int, error) {
		if len(tags.buf) == 0 {
			if tags.head != "" {
				tags.buf, tags.head = []byte(tags.head), ""
			} else {
				n++
				tags.buf = []byte(strings.Replace(line, "Tag=latency%2Fx,", fmt.Sprintf("Tag=latency%%2Fx%d,", n), 1))
			}
		}
		c := copy(p, tags.buf)
		tags.buf = tags.buf[c:]
		tags.given += int64(c)
		return c, nil
	})
	decoded = 0
	err = ReadEach(gen, settings, Limits{Histograms: 50}, func(Entry) error { decoded++; return nil })
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.What != "histograms" || decoded != 50 || n > 2000 {
		t.Errorf("endless distinct histograms: %v, %d decoded, %d lines made", err, decoded, n)
	}

	comments := &endless{head: head, line: "#" + strings.Repeat("c", 1000) + "\n"}
	err = ReadEach(comments, settings, Limits{Bytes: 1 << 20}, func(Entry) error { return nil })
	if !errors.As(err, &tl) || tl.What != "bytes" || comments.given > 1<<20+64<<10 {
		t.Errorf("endless comments: %v, %d bytes read", err, comments.given)
	}

	long := &endless{head: head, line: "Tag=x,0.0,1.0,0.0,HIST" + strings.Repeat("A", 1000)}
	err = ReadEach(long, settings, Limits{}, func(Entry) error { return nil })
	if !errors.As(err, &tl) || tl.What != "line" || long.given > 1<<20 {
		t.Errorf("an endless line: %v, %d bytes read", err, long.given)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// payload is a histogram's payload as a log holds it, its header saying
// the settings lowest..highest at digits, its counts none.
func payload(t *testing.T, lowest, highest int64, digits int32) string {
	t.Helper()
	var head bytes.Buffer
	for _, v := range []any{hdrhistogram.V2EncodingCookieBase | 0x10, int32(0), int32(0), digits, lowest, highest, 1.0} {
		binary.Write(&head, binary.BigEndian, v)
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(head.Bytes())
	zw.Close()
	var out bytes.Buffer
	binary.Write(&out, binary.BigEndian, hdrhistogram.V2CompressedEncodingCookieBase|0x10)
	binary.Write(&out, binary.BigEndian, int32(z.Len()))
	out.Write(z.Bytes())
	return base64.StdEncoding.EncodeToString(out.Bytes())
}

// A histogram of other settings is refused from its header, before the
// decoder allocates the counts those settings make (1..MaxInt64 at 5
// digits: about 49 MB).
func TestReadRefusesOtherSettingsBeforeDecoding(t *testing.T) {
	start := time.UnixMilli(1_790_000_000_000)
	head, _ := logParts(t, Entry{Tag: "x", Start: start, End: start, Histogram: filled(5)})
	same := head + "Tag=x,0.0,1.0,0.0," + payload(t, settings.Lowest, settings.Highest, int32(settings.Digits)) + "\n"
	if got, err := Read(strings.NewReader(same), settings); err != nil || len(got) != 1 {
		t.Fatalf("a crafted payload of the right settings: %v (the test's payload is wrong)", err)
	}
	wide := head + "Tag=x,0.0,1.0,0.0," + payload(t, 1, math.MaxInt64, 5) + "\n"
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Read(strings.NewReader(wide), settings)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "cannot be added exactly") {
		t.Fatalf("a histogram of 1..MaxInt64 at 5 digits: %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Errorf("refusing it allocated %d bytes: its counts were decoded", grew)
	}
}
