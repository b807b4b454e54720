package target

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/redirect"
)

// ReplyTime is how long a GET of u takes to answer in full, within
// timeout, header sent with it (a Host field names the host): the cheap
// probe of a target whose CPU is not seen, by which a settle wait judges it
// quiet (issue 25). Any status counts: a reply is a server with time to
// answer.
func ReplyTime(ctx context.Context, u *url.URL, header []h1.Field, timeout time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	get := *u
	if get.Path == "" {
		get.Path = "/"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, get.String(), nil)
	if err != nil {
		return 0, err
	}
	for _, f := range header {
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
