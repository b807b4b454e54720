package report

import (
	"encoding/json"
	"math"
)

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
