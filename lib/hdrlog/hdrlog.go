// Package hdrlog writes and reads HdrHistogram interval logs (the format of
// HdrHistogram's HistogramLogWriter, version 1.3): hdrhistogram-go's own
// writer, and a reader of its own line by line within limits (bytes,
// histograms, a line's length) that refuses a repeated tag and a log whose
// histograms were made with other settings, from a payload's header before
// its counts are allocated: two histograms add exactly only when their
// buckets are the same.
package hdrlog

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Settings are what makes two histograms' buckets the same.
type Settings struct {
	Lowest, Highest int64
	Digits          int
}

// Of is h's settings.
func Of(h *hdrhistogram.Histogram) Settings {
	return Settings{Lowest: h.LowestTrackableValue(), Highest: h.HighestTrackableValue(), Digits: int(h.SignificantFigures())}
}

func (s Settings) String() string {
	return fmt.Sprintf("%d..%d, %d significant digits", s.Lowest, s.Highest, s.Digits)
}

// Entry is one interval histogram of a log: its tag (any text: it is
// escaped in the log, where a tag may hold no comma or space) and the
// interval it covers.
type Entry struct {
	Tag        string
	Start, End time.Time
	Histogram  *hdrhistogram.Histogram
}

// Write writes entries as one log, its start time start.
func Write(w io.Writer, start time.Time, entries []Entry) error {
	lw := hdrhistogram.NewHistogramLogWriter(w)
	for _, err := range []error{lw.OutputLogFormatVersion(), lw.OutputStartTime(start.UnixMilli()), lw.OutputLegend()} {
		if err != nil {
			return err
		}
	}
	for _, e := range entries {
		// The writer reads the tag and times off the histogram: set them on
		// a copy, so that the caller's is left as it was.
		h := hdrhistogram.Import(e.Histogram.Export())
		h.SetTag(url.PathEscape(e.Tag))
		h.SetStartTimeMs(e.Start.UnixMilli())
		h.SetEndTimeMs(e.End.UnixMilli())
		if err := lw.OutputIntervalHistogram(h); err != nil {
			return err
		}
	}
	return nil
}

// Encode is Write into a new slice.
func Encode(start time.Time, entries []Entry) ([]byte, error) {
	var b bytes.Buffer
	err := Write(&b, start, entries)
	return b.Bytes(), err
}

// Bounds of what a log may make Read take in. A histogram costs its
// settings' counts array however few bytes its line holds (160 KiB at
// 1 µs..5 min and 3 digits, from a line of about 100 bytes): the bytes
// alone do not bound the memory, the number of histograms does.
const (
	DefaultBytes      = 64 << 20
	DefaultHistograms = 10_000
)

// Limits bound a log as it is read.
type Limits struct {
	// Bytes is the most the log may hold (0: DefaultBytes).
	Bytes int64
	// Histograms is the most histograms it may hold (0: DefaultHistograms).
	Histograms int
	// Accept, when set, is asked about each histogram's tag before its
	// payload is decoded: an error ends the read there.
	Accept func(tag string) error
}

// TooLargeError is a log past one of its Limits.
type TooLargeError struct {
	What  string // "bytes", "histograms" or "line"
	Limit int64
}

func (e *TooLargeError) Error() string {
	switch e.What {
	case "histograms":
		return fmt.Sprintf("over %d histograms", e.Limit)
	case "line":
		return fmt.Sprintf("a line over %d bytes", e.Limit)
	}
	return fmt.Sprintf("over %d bytes", e.Limit)
}

// Read reads every histogram of a log within DefaultBytes and
// DefaultHistograms (see ReadEach).
func Read(r io.Reader, want Settings) ([]Entry, error) {
	var out []Entry
	err := ReadEach(r, want, Limits{}, func(e Entry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// ReadEach reads a log line by line within lim, handing each histogram to
// each as it is decoded. Every histogram must have the settings want (the
// header of its payload is checked before its counts are allocated); a tag
// given twice, a line that is not a histogram, a comment or the legend, and
// a histogram before the format version line are errors, found as they are
// read: nothing past them is decoded.
func ReadEach(r io.Reader, want Settings, lim Limits, each func(Entry) error) error {
	if lim.Bytes <= 0 {
		lim.Bytes = DefaultBytes
	}
	if lim.Histograms <= 0 {
		lim.Histograms = DefaultHistograms
	}
	// A histogram's line holds at most its counts array, each count a
	// varint of at most 9 bytes, compressed and in base64.
	maxLine := min(lim.Bytes, int64(2*hdrhistogram.New(want.Lowest, want.Highest, want.Digits).ByteSize()+4096))
	sc := bufio.NewScanner(&capped{r: r, left: lim.Bytes, limit: lim.Bytes})
	sc.Buffer(make([]byte, 0, min(maxLine, 64<<10)), int(maxLine))
	var (
		version     bool
		start, base float64
		started     bool
		based       bool
		n, line     int
		tags        = map[string]bool{}
	)
	for sc.Scan() {
		line++
		text := sc.Text()
		switch {
		case strings.HasPrefix(text, "#"):
			if strings.Contains(text, "[Histogram log format version") {
				version = true
			}
			if v, ok := timeComment(text, "#[StartTime: "); ok {
				start, started = v, true
			}
			if v, ok := timeComment(text, "#[BaseTime: "); ok {
				base, based = v, true
			}
			continue
		case strings.HasPrefix(text, `"StartTimestamp"`):
			continue
		}
		tag, rest := "", text
		if t, after, ok := strings.Cut(text, ","); ok && strings.HasPrefix(t, "Tag=") {
			tag, rest = t[len("Tag="):], after
		}
		fields := strings.SplitN(rest, ",", 4)
		if len(fields) != 4 || !strings.HasPrefix(fields[3], "HIST") {
			return fmt.Errorf("line %d is not part of a histogram log", line)
		}
		if !version {
			return fmt.Errorf("not a histogram log (no format version line)")
		}
		n++
		if n > lim.Histograms {
			return &TooLargeError{What: "histograms", Limit: int64(lim.Histograms)}
		}
		name, err := url.PathUnescape(tag)
		if err != nil {
			return fmt.Errorf("histogram %d: tag %q: %v", n, tag, err)
		}
		if tags[name] {
			return fmt.Errorf("histogram %d: tag %q a second time", n, name)
		}
		tags[name] = true
		if lim.Accept != nil {
			if err := lim.Accept(name); err != nil {
				return err
			}
		}
		at, err1 := strconv.ParseFloat(fields[0], 64)
		length, err2 := strconv.ParseFloat(fields[1], 64)
		if err1 != nil || err2 != nil || !finite(at) || !finite(length) || at < 0 || length < 0 {
			return fmt.Errorf("histogram %d: times %q, %q are not seconds", n, fields[0], fields[1])
		}
		h, err := decode(fields[3], want)
		if err != nil {
			return fmt.Errorf("histogram %d: %v", n, err)
		}
		// The times as hdrhistogram-go's reader makes them: a log with no
		// start time starts at its first histogram; with no base time, one
		// whose times are a year before its start counts from the start.
		if !started {
			start, started = at, true
		}
		if !based {
			if at < start-365*24*3600 {
				base = start
			}
			based = true
		}
		from := at + base
		e := Entry{Tag: name, Start: time.UnixMilli(int64(from * 1000)), End: time.UnixMilli(int64((from + length) * 1000)),
			Histogram: h}
		if err := each(e); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &TooLargeError{What: "line", Limit: maxLine}
		}
		return err
	}
	if !version {
		return fmt.Errorf("not a histogram log (no format version line)")
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// timeComment is the seconds of a "#[StartTime: …" or "#[BaseTime: …" line.
func timeComment(line, prefix string) (float64, bool) {
	rest, ok := strings.CutPrefix(line, prefix)
	if !ok {
		return 0, false
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if end < 0 {
		end = len(rest)
	}
	v, err := strconv.ParseFloat(rest[:end], 64)
	return v, err == nil && finite(v)
}

// capped reads r to its end, or fails with a TooLargeError past limit bytes.
type capped struct {
	r           io.Reader
	left, limit int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		if n, _ := io.ReadFull(c.r, one[:]); n > 0 {
			return 0, &TooLargeError{What: "bytes", Limit: c.limit}
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// headerSize is a V2 payload's header once inflated: cookie, payload
// length, index offset, digits (4 bytes each), lowest, highest and the
// conversion ratio (8 bytes each).
const headerSize = 40

// decode is a histogram's payload, its settings checked from its header
// before hdrhistogram-go allocates the counts they make (a header of
// 1..MaxInt64 at 5 digits would cost 49 MB); a payload the decoder panics
// on is an error like any other corrupt payload.
func decode(payload string, want Settings) (h *hdrhistogram.Histogram, err error) {
	raw, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return nil, fmt.Errorf("corrupt payload (%v)", err)
	}
	if len(raw) < 8 {
		return nil, fmt.Errorf("corrupt payload (%d bytes)", len(raw))
	}
	size := int64(binary.BigEndian.Uint32(raw[4:8]))
	if size > int64(len(raw)-8) {
		return nil, fmt.Errorf("corrupt payload (%d compressed bytes announced, %d sent)", size, len(raw)-8)
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw[8 : 8+size]))
	if err != nil {
		return nil, fmt.Errorf("corrupt payload (%v)", err)
	}
	var head [headerSize]byte
	_, err = io.ReadFull(zr, head[:])
	zr.Close()
	if err != nil {
		return nil, fmt.Errorf("corrupt payload (%v)", err)
	}
	got := Settings{Lowest: int64(binary.BigEndian.Uint64(head[16:24])), Highest: int64(binary.BigEndian.Uint64(head[24:32])),
		Digits: int(int32(binary.BigEndian.Uint32(head[12:16])))}
	if got != want {
		return nil, fmt.Errorf("recorded with settings %v, not %v: it cannot be added exactly", got, want)
	}
	defer func() {
		if p := recover(); p != nil {
			h, err = nil, fmt.Errorf("corrupt payload (%v)", p)
		}
	}()
	h, err = hdrhistogram.Decode([]byte(payload))
	if err != nil {
		return nil, err
	}
	if got := Of(h); got != want { // the decoder's reading of the header, should it differ from the above
		return nil, fmt.Errorf("recorded with settings %v, not %v: it cannot be added exactly", got, want)
	}
	return h, nil
}
