package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// capacity is a fake server of k workers, each r requests a second:
// throughput min(clients, k) × r; beyond k, clients queue and the median
// grows with them.
func capacity(k int, r float64, asked *[]int) MeasureFunc {
	return func(_ context.Context, clients int, _ time.Duration) (float64, time.Duration, int64, error) {
		*asked = append(*asked, clients)
		service := time.Duration(float64(time.Second) / r)
		p50 := service * time.Duration(max(1, (clients+k-1)/k))
		return float64(min(clients, k)) * r, p50, 0, nil
	}
}

func TestChooseConcurrencyFindsTheKnee(t *testing.T) {
	for _, k := range []int{1, 4, 8, 32} {
		var asked []int
		c, err := ChooseConcurrency(context.Background(), capacity(k, 20, &asked), 30*time.Second, 256)
		if err != nil {
			t.Fatal(err)
		}
		if c.Chosen != k {
			t.Errorf("capacity %d: chose %d (steps %v, %s)", k, c.Chosen, asked, c.Why)
		}
		if last := asked[len(asked)-1]; last != 2*k {
			t.Errorf("capacity %d: the search went on to %d clients (want it to stop at %d)", k, last, 2*k)
		}
		if len(c.Steps) != len(asked) || !strings.Contains(c.Why, "less than 10%") {
			t.Errorf("capacity %d: steps %d of %d asked, why %q", k, len(c.Steps), len(asked), c.Why)
		}
	}
}

func TestChooseConcurrencyStopsAtTimeouts(t *testing.T) {
	// A slow endpoint: one client is served in 1.5 s; two time out.
	measure := func(_ context.Context, clients int, _ time.Duration) (float64, time.Duration, int64, error) {
		if clients >= 2 {
			return 1.2, 1500 * time.Millisecond, 3, nil
		}
		return 0.66, 1500 * time.Millisecond, 0, nil
	}
	c, err := ChooseConcurrency(context.Background(), measure, 0, 256)
	if err != nil {
		t.Fatal(err)
	}
	if c.Chosen != 1 || len(c.Steps) != 2 || !strings.Contains(c.Why, "timed out at 2 clients") {
		t.Errorf("chose %d after %d steps: %s", c.Chosen, len(c.Steps), c.Why)
	}
}

func TestChooseConcurrencyStopsPastAQuarterOfTheTimeout(t *testing.T) {
	var asked []int
	// Throughput still grows, but the median grows 200 ms a client: at 4
	// clients its 800 ms is past 3 s/4; the step before is chosen.
	measure := func(_ context.Context, clients int, _ time.Duration) (float64, time.Duration, int64, error) {
		asked = append(asked, clients)
		return float64(clients), 200 * time.Millisecond * time.Duration(clients), 0, nil
	}
	c, err := ChooseConcurrency(context.Background(), measure, 3*time.Second, 256)
	if err != nil {
		t.Fatal(err)
	}
	if c.Chosen != 2 || len(asked) != 3 || !strings.Contains(c.Why, "quarter") {
		t.Errorf("chose %d (steps %v): %s", c.Chosen, asked, c.Why)
	}
}

func TestChooseConcurrencyFlatFromTheStart(t *testing.T) {
	var asked []int
	c, err := ChooseConcurrency(context.Background(), capacity(1, 100, &asked), 30*time.Second, 256)
	if err != nil {
		t.Fatal(err)
	}
	if c.Chosen != 1 || len(asked) != 2 {
		t.Errorf("chose %d after %v", c.Chosen, asked)
	}
}

func TestChooseConcurrencyIsBounded(t *testing.T) {
	var asked []int
	c, err := ChooseConcurrency(context.Background(), capacity(1000, 100, &asked), 30*time.Second, 48)
	if err != nil {
		t.Fatal(err)
	}
	if c.Chosen != 48 || asked[len(asked)-1] != 48 {
		t.Errorf("chose %d after %v, want the bound 48", c.Chosen, asked)
	}
}

func TestChooseConcurrencyWindows(t *testing.T) {
	var windows []time.Duration
	measure := func(_ context.Context, clients int, d time.Duration) (float64, time.Duration, int64, error) {
		windows = append(windows, d)
		return float64(min(clients, 4)), 800 * time.Millisecond, 0, nil
	}
	if _, err := ChooseConcurrency(context.Background(), measure, time.Minute, 256); err != nil {
		t.Fatal(err)
	}
	// The first window is 1 s; then 3 × the 800 ms median.
	if windows[0] != time.Second || windows[1] != 2400*time.Millisecond {
		t.Errorf("windows %v", windows)
	}
}

func TestChooseConcurrencyStepError(t *testing.T) {
	boom := errors.New("connection refused")
	measure := func(context.Context, int, time.Duration) (float64, time.Duration, int64, error) { return 0, 0, 0, boom }
	if _, err := ChooseConcurrency(context.Background(), measure, time.Minute, 256); !errors.Is(err, boom) {
		t.Errorf("err %v, want the step's", err)
	}
}
