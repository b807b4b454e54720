// Package hdrlog writes and reads HdrHistogram interval logs (the format of
// HdrHistogram's HistogramLogWriter, version 1.3) through hdrhistogram-go's
// own writer and reader, and refuses a log whose histograms were made with
// other settings: two histograms add exactly only when their buckets are
// the same.
package hdrlog

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
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

// Read reads every histogram of a log, each of which must have the
// settings want; a line that is not a histogram, a comment or a tag of one
// is an error, as is a log with no histogram header.
func Read(r io.Reader, want Settings) ([]Entry, error) {
	text, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	// hdrhistogram-go's reader skips a line it cannot match: a log cut or
	// overwritten there would read as fewer values. Each line is checked
	// first.
	lines := strings.Split(strings.TrimRight(string(text), "\n"), "\n")
	histograms := 0
	for i, line := range lines {
		switch {
		case strings.HasPrefix(line, "#"), strings.HasPrefix(line, `"StartTimestamp"`):
		case strings.Count(line, ",") >= 3 && strings.Contains(line, "HIST"):
			histograms++
		default:
			return nil, fmt.Errorf("line %d is not part of a histogram log", i+1)
		}
	}
	if !strings.Contains(string(text), "[Histogram log format version") {
		return nil, fmt.Errorf("not a histogram log (no format version line)")
	}
	lr := hdrhistogram.NewHistogramLogReader(bytes.NewReader(text))
	var out []Entry
	for {
		h, err := readNext(lr)
		if err != nil {
			return nil, fmt.Errorf("histogram %d: %v", len(out)+1, err)
		}
		if h == nil {
			break
		}
		if got := Of(h); got != want {
			return nil, fmt.Errorf("histogram %d was recorded with settings %v, not %v: it cannot be added exactly", len(out)+1, got, want)
		}
		tag, err := url.PathUnescape(h.Tag())
		if err != nil {
			return nil, fmt.Errorf("histogram %d: tag %q: %v", len(out)+1, h.Tag(), err)
		}
		out = append(out, Entry{Tag: tag, Start: time.UnixMilli(h.StartTimeMs()), End: time.UnixMilli(h.EndTimeMs()), Histogram: h})
	}
	if len(out) != histograms {
		return nil, fmt.Errorf("%d histogram lines, %d could be read", histograms, len(out))
	}
	return out, nil
}

// readNext is the reader's next histogram; a payload the decoder panics on
// is an error like any other corrupt payload.
func readNext(lr *hdrhistogram.HistogramLogReader) (h *hdrhistogram.Histogram, err error) {
	defer func() {
		if p := recover(); p != nil {
			h, err = nil, fmt.Errorf("corrupt payload (%v)", p)
		}
	}()
	return lr.NextIntervalHistogram()
}
