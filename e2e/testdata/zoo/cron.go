package main

import (
	"fmt"
	"strconv"
	"time"
)

// A small cron parser (minute hour day-of-month month day-of-week), the
// zoo's own code: parsing work no library's name gives away.

type cronSchedule struct {
	minute, hour, dom, month, dow uint64 // bit i set: value i matches
}

var cronRanges = [5][2]int{{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 6}}

func parseCron(expr string) (cronSchedule, error) {
	var bits [5]uint64
	n, i := 0, 0
	for i < len(expr) {
		for i < len(expr) && expr[i] == ' ' {
			i++
		}
		j := i
		for j < len(expr) && expr[j] != ' ' {
			j++
		}
		if i == j {
			break
		}
		if n == 5 {
			return cronSchedule{}, fmt.Errorf("%q: want five fields", expr)
		}
		b, err := parseCronField(expr[i:j], cronRanges[n][0], cronRanges[n][1])
		if err != nil {
			return cronSchedule{}, fmt.Errorf("%q: field %d: %v", expr, n+1, err)
		}
		bits[n], n, i = b, n+1, j
	}
	if n != 5 {
		return cronSchedule{}, fmt.Errorf("%q: want five fields", expr)
	}
	return cronSchedule{bits[0], bits[1], bits[2], bits[3], bits[4]}, nil
}

// parseCronField reads one field, a list of "*", "a", "a-b", each with an
// optional "/step", by hand: a lexer over its bytes.
func parseCronField(f string, lo, hi int) (uint64, error) {
	var bits uint64
	i := 0
	number := func() (int, error) {
		j := i
		for j < len(f) && f[j] >= '0' && f[j] <= '9' {
			j++
		}
		if j == i {
			return 0, fmt.Errorf("want a number at %q", f[i:])
		}
		n, err := strconv.Atoi(f[i:j])
		i = j
		return n, err
	}
	for {
		from, to, step := lo, hi, 1
		if i < len(f) && f[i] == '*' {
			i++
		} else {
			a, err := number()
			if err != nil {
				return 0, err
			}
			from, to = a, a
			if i < len(f) && f[i] == '-' {
				i++
				if to, err = number(); err != nil {
					return 0, err
				}
			}
		}
		if i < len(f) && f[i] == '/' {
			i++
			n, err := number()
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("bad step in %q", f)
			}
			step = n
		}
		if from < lo || to > hi || from > to {
			return 0, fmt.Errorf("%q out of %d-%d", f, lo, hi)
		}
		for v := from; v <= to; v += step {
			bits |= 1 << v
		}
		if i == len(f) {
			return bits, nil
		}
		if f[i] != ',' {
			return 0, fmt.Errorf("unexpected %q in %q", f[i], f)
		}
		i++
	}
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
