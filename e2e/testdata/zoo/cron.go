package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A small cron parser (minute hour day-of-month month day-of-week), the
// zoo's own code: parsing work no library's name gives away.

type cronSchedule struct {
	minute, hour, dom, month, dow uint64 // bit i set: value i matches
}

var cronRanges = [5][2]int{{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 6}}

func parseCron(expr string) (cronSchedule, error) {
	fields := strings.Fields(expr)
	if len(fields) != 5 {
		return cronSchedule{}, fmt.Errorf("%q: want five fields", expr)
	}
	var bits [5]uint64
	for i, f := range fields {
		b, err := parseCronField(f, cronRanges[i][0], cronRanges[i][1])
		if err != nil {
			return cronSchedule{}, fmt.Errorf("%q: field %d: %v", expr, i+1, err)
		}
		bits[i] = b
	}
	return cronSchedule{bits[0], bits[1], bits[2], bits[3], bits[4]}, nil
}

func parseCronField(f string, lo, hi int) (uint64, error) {
	var bits uint64
	for _, part := range strings.Split(f, ",") {
		step := 1
		if base, s, ok := strings.Cut(part, "/"); ok {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("bad step %q", s)
			}
			part, step = base, n
		}
		from, to := lo, hi
		switch {
		case part == "*":
		case strings.Contains(part, "-"):
			a, b, _ := strings.Cut(part, "-")
			var err1, err2 error
			from, err1 = strconv.Atoi(a)
			to, err2 = strconv.Atoi(b)
			if err1 != nil || err2 != nil {
				return 0, fmt.Errorf("bad range %q", part)
			}
		default:
			n, err := strconv.Atoi(part)
			if err != nil {
				return 0, fmt.Errorf("bad value %q", part)
			}
			from, to = n, n
		}
		if from < lo || to > hi || from > to {
			return 0, fmt.Errorf("%q out of %d-%d", part, lo, hi)
		}
		for v := from; v <= to; v += step {
			bits |= 1 << v
		}
	}
	return bits, nil
}

// next is the first time after t that the schedule matches: day by day,
// then the first matching hour and minute of that day.
func (s cronSchedule) next(t time.Time) time.Time {
	t = t.Truncate(time.Minute).Add(time.Minute)
	for range 400 {
		if s.month&(1<<int(t.Month())) != 0 && s.dom&(1<<t.Day()) != 0 && s.dow&(1<<int(t.Weekday())) != 0 {
			for h := t.Hour(); h < 24; h++ {
				if s.hour&(1<<h) == 0 {
					continue
				}
				m0 := 0
				if h == t.Hour() {
					m0 = t.Minute()
				}
				for m := m0; m < 60; m++ {
					if s.minute&(1<<m) != 0 {
						return time.Date(t.Year(), t.Month(), t.Day(), h, m, 0, 0, t.Location())
					}
				}
			}
		}
		t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, t.Location())
	}
	return time.Time{}
}
