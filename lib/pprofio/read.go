// Package pprofio reads pprof profiles with bounds. A profile comes from a
// target probe does not trust (its /debug/pprof) or from a file a user
// names: either can be endless or a gzip bomb. profile.Parse reads all of
// its input and decompresses without a limit; Read caps both the bytes
// read and the bytes they decompress to, and says which cap was hit.
package pprofio

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"

	"github.com/dustin/go-humanize"
	"github.com/google/pprof/profile"
)

// DefaultLimit bounds a profile's bytes as read and as decompressed. A
// CPU profile of a busy server over 30 s is a few MB; 32 MiB leaves room,
// and a run's several fetches at once stay within probe's memory (a
// hostile target's endless profiles kept probe under 300 MB).
const DefaultLimit = 32 << 20

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

// Parse is the profile in raw (gzip or not), decompressed within limit.
func Parse(raw []byte, limit int64) (*profile.Profile, error) {
	data, err := Decompress(raw, limit)
	if err != nil {
		return nil, err
	}
	p, err := profile.ParseData(data)
	if err != nil {
		return nil, fmt.Errorf("not a pprof profile: %v", err)
	}
	return p, nil
}

// Read reads a profile from r within limit bytes as read and as
// decompressed; it returns the bytes read too (to keep them as a file).
func Read(r io.Reader, limit int64) (*profile.Profile, []byte, error) {
	raw, err := ReadAll(r, limit)
	if err != nil {
		return nil, nil, err
	}
	p, err := Parse(raw, limit)
	if err != nil {
		return nil, nil, err
	}
	return p, raw, nil
}

func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }
