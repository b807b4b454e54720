package report

import (
	"encoding/json"
	"math"
)

// Interval is a confidence interval; a side it cannot bound (too few
// runs, or a ratio over an interval reaching 0) is ±Inf, null in JSON.
type Interval [2]float64

func (iv Interval) MarshalJSON() ([]byte, error) {
	out := make([]any, 2)
	for i, v := range iv {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			out[i] = v
		}
	}
	return json.Marshal(out)
}

// Reading report.json back (the end-to-end tests do) gives the values that
// were written. Most types decode as they are; what follows is for those
// that write something encoding/json cannot read back by itself.

// UnmarshalJSON reads an interval as MarshalJSON writes it: a null side
// is one the interval cannot bound, -Inf below and +Inf above.
func (iv *Interval) UnmarshalJSON(b []byte) error {
	var sides [2]*float64
	if err := json.Unmarshal(b, &sides); err != nil {
		return err
	}
	*iv = Interval{math.Inf(-1), math.Inf(1)}
	for i, v := range sides {
		if v != nil {
			iv[i] = *v
		}
	}
	return nil
}
