// Package pprofio reads pprof profiles with bounds. A profile comes from a
// target probe does not trust (its /debug/pprof) or from a file a user
// names: either can be endless or a gzip bomb. profile.Parse reads all of
// its input and decompresses without a limit; Read caps both the bytes
// read and the bytes they decompress to, and says which cap was hit. It
// counts the samples, locations and functions before they are parsed (a
// small sample costs ~35 times its bytes parsed), and drops the samples
// of values no profiler writes (below zero, or a total past an int64).
package pprofio

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/textline"
)

// DefaultLimit bounds a profile's bytes as read and as decompressed. A
// CPU profile of a busy server over 30 s is a few MB; 32 MiB leaves room,
// and a run's several fetches at once stay within probe's memory (a
// hostile target's endless profiles kept probe under 300 MB).
const DefaultLimit = 32 << 20

// BytesPerEntry is how many bytes of the limit allow one sample, one
// location and one function: DefaultLimit allows 1,048,576 of each. A
// profile of a busy fleet merged over a day holds some tens of thousands.
const BytesPerEntry = 32

// MaxEntries is how many samples, locations and functions a profile read
// within limit bytes may hold (limit ≤ 0: DefaultLimit).
func MaxEntries(limit int64) int64 {
	if limit <= 0 {
		limit = DefaultLimit
	}
	return max(1, limit/BytesPerEntry)
}

// TooManyError is a profile of more samples, locations or functions than
// its limit allows.
type TooManyError struct {
	What  string // "samples", "locations" or "functions"
	Limit int64  // the most allowed
	Bytes int64  // the limit in bytes it follows from
}

func (e *TooManyError) Error() string {
	return fmt.Sprintf("profile holds over %s %s (one per %d bytes of --max-profile %s: raise it)",
		humanize.Comma(e.Limit), e.What, BytesPerEntry, humanize.IBytes(uint64(e.Bytes)))
}

// TooLargeError is a profile past one of Read's bounds.
type TooLargeError struct {
	What  string // "read" or "decompressed"
	Limit int64
}

func (e *TooLargeError) Error() string {
	if e.What == "decompressed" {
		return fmt.Sprintf("profile decompresses to over %s (a gzip bomb, or raise --max-profile)", humanize.IBytes(uint64(e.Limit)))
	}
	return fmt.Sprintf("profile over %s as sent (an endless reply, or raise --max-profile)", humanize.IBytes(uint64(e.Limit)))
}

// ReadAll reads r to its end, or fails with a TooLargeError past limit
// bytes (limit ≤ 0: DefaultLimit).
func ReadAll(r io.Reader, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{What: "read", Limit: limit}
	}
	return b, nil
}

// Decompress is raw decompressed when it is gzip, within limit bytes, and
// raw itself otherwise. Gzip inside gzip is refused: profile.ParseData
// would decompress the inner layer without a bound.
func Decompress(raw []byte, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	if !isGzip(raw) {
		return raw, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not a pprof profile: %v", err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, fmt.Errorf("not a pprof profile: gzip: %v", err)
	}
	if int64(len(out)) > limit {
		return nil, &TooLargeError{What: "decompressed", Limit: limit}
	}
	if isGzip(out) {
		return nil, errors.New("not a pprof profile: gzip inside gzip")
	}
	return out, nil
}

// Parse is the profile in raw (gzip or not), decompressed within limit,
// of at most MaxEntries(limit) samples, locations and functions (counted
// before they are parsed), its invalid samples dropped: invalid says
// which ("" when none), for a profile-invalid warning.
func Parse(raw []byte, limit int64) (p *profile.Profile, invalid string, err error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	data, err := Decompress(raw, limit)
	if err != nil {
		return nil, "", err
	}
	if err := checkCounts(data, limit); err != nil {
		return nil, "", err
	}
	p, err = profile.ParseData(data)
	if err != nil {
		return nil, "", fmt.Errorf("not a pprof profile: %v", err)
	}
	Printable(p)
	return p, DropInvalid(p), nil
}

// MaxName is the length a function or file name in a profile is cut to:
// a terminal line's (a generic instantiation's shapes, longer, are shown
// as […] anyway).
const MaxName = textline.Max

// Printable makes each function's and mapping's names in p printable
// text of at most MaxName bytes: a profile comes from a server, and its
// names reach the terminal and the reports as findings, stacks and paths.
func Printable(p *profile.Profile) {
	clean := func(s *string) {
		if out := textline.Of(*s, MaxName); out != *s {
			*s = out
		}
	}
	for _, f := range p.Function {
		clean(&f.Name)
		clean(&f.SystemName)
		clean(&f.Filename)
	}
	for _, m := range p.Mapping {
		clean(&m.File)
	}
}

// Read reads a profile from r within limit bytes as read and as
// decompressed (see Parse); it returns the bytes read too (to keep them
// as a file), as they came.
func Read(r io.Reader, limit int64) (p *profile.Profile, raw []byte, invalid string, err error) {
	raw, err = ReadAll(r, limit)
	if err != nil {
		return nil, nil, "", err
	}
	p, invalid, err = Parse(raw, limit)
	if err != nil {
		return nil, nil, "", err
	}
	return p, raw, invalid, nil
}

// DropInvalid drops p's samples that no profiler writes, and says which
// ("" when none): a value below zero (pprof's values are signed, and a
// share of a negative total is no share), or one that carries its type's
// total past what an int64 holds.
func DropInvalid(p *profile.Profile) string {
	negative, over := map[string]int{}, map[string]int{}
	totals := make([]int64, len(p.SampleType))
	kept := p.Sample[:0]
	for _, s := range p.Sample {
		var neg, past []string
		for i, v := range s.Value {
			switch {
			case i >= len(totals):
			case v < 0:
				neg = append(neg, p.SampleType[i].Type)
			case v > math.MaxInt64-totals[i]:
				past = append(past, p.SampleType[i].Type)
			}
		}
		if len(neg) > 0 {
			negative[negativeValues(neg)]++
			continue
		}
		if len(past) > 0 {
			over[values(past)]++
			continue
		}
		for i, v := range s.Value {
			if i < len(totals) {
				totals[i] += v
			}
		}
		kept = append(kept, s)
	}
	clear(p.Sample[len(kept):])
	p.Sample = kept
	var parts []string
	for _, typ := range slices.Sorted(maps.Keys(negative)) {
		parts = append(parts, fmt.Sprintf("%s of %s", samples(negative[typ]), typ))
	}
	for _, typ := range slices.Sorted(maps.Keys(over)) {
		parts = append(parts, fmt.Sprintf("%s whose %s carries the total past 2^63", samples(over[typ]), typ))
	}
	if len(parts) == 0 {
		return ""
	}
	return "dropped " + strings.Join(parts, ", ") + " (no profiler writes such values)"
}

// negativeValues and values name the sample types of a sample's bad
// values: "a negative cpu value", "samples and cpu values".
func negativeValues(types []string) string {
	if len(types) == 1 {
		return "a negative " + types[0] + " value"
	}
	return "negative " + strings.Join(types, " and ") + " values"
}

func values(types []string) string {
	if len(types) == 1 {
		return types[0] + " value"
	}
	return strings.Join(types, " and ") + " values"
}

func samples(n int) string {
	if n == 1 {
		return "1 sample"
	}
	return humanize.Comma(int64(n)) + " samples"
}

// checkCounts counts the samples (field 2 of a Profile), locations (4)
// and functions (5) in an uncompressed profile by their tags, before
// profile.ParseData builds them: a 31 MiB profile of 2.7 million
// one-frame samples parsed to 1.1 GB. A malformed profile is left to
// ParseData to refuse.
func checkCounts(data []byte, limit int64) error {
	most := MaxEntries(limit)
	var n [3]int64
	for i := 0; i < len(data); {
		tag, k := binary.Uvarint(data[i:])
		if k <= 0 {
			return nil
		}
		i += k
		switch tag & 7 {
		case 0:
			if _, k = binary.Uvarint(data[i:]); k <= 0 {
				return nil
			}
			i += k
		case 1:
			i += 8
		case 2:
			l, k := binary.Uvarint(data[i:])
			if k <= 0 || l > uint64(len(data)-i-k) {
				return nil
			}
			i += k + int(l)
		case 5:
			i += 4
		default:
			return nil
		}
		var j int
		switch tag >> 3 {
		case 2:
			j = 0
		case 4:
			j = 1
		case 5:
			j = 2
		default:
			continue
		}
		if n[j]++; n[j] > most {
			return &TooManyError{What: [3]string{"samples", "locations", "functions"}[j], Limit: most, Bytes: limit}
		}
	}
	return nil
}

func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }
