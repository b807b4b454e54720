package probes

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/probehq/probe/lib/redirect"
)

// The quiet target (issue 25): between the microloads of probe all the
// target may still be finishing requests probe abandoned. These are the
// two readings pipeline's settler judges quiet by.

// TargetPID is the target's process on this machine: the child probe
// started, or the process listening on the target's port; an error says
// why it cannot be seen (another host, or /proc closed to probe).
func TargetPID(t *Target) (int, error) {
	if t.Child != nil {
		return t.Child.PID(), nil
	}
	l, err := FindListener(t.Addr())
	return l.PID, err
}

// ProcessCPU is the CPU time pid and its live children have used so far.
func ProcessCPU(pid int) (time.Duration, error) {
	s, err := readProc(pid)
	return s.cpu, err
}

// ReplyTime is how long a GET of the target's URL takes to answer in
// full, within timeout: the cheap probe of a target whose CPU is not
// seen. Any status counts: a reply is a server with time to answer.
func ReplyTime(ctx context.Context, t *Target, timeout time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := *t.URL
	if u.Path == "" {
		u.Path = "/"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("User-Agent", UserAgent)
	for _, f := range t.Header {
		if http.CanonicalHeaderKey(f.Name) == "Host" {
			req.Host = f.Value
			continue
		}
		req.Header.Add(f.Name, f.Value)
	}
	// A client of its own, no kept connection: the probe adds no load. A
	// 3xx is the reply, as the load engine sees it; nothing follows it.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, CheckRedirect: redirect.Status}
	defer client.CloseIdleConnections()
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return 0, errors.New("no reply within " + timeout.String())
		}
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
