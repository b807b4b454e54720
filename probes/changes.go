package probes

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/result"
)

// A change is one note written to a target, then watched until the target
// shows it: the cost of a change as the seeds measured it (the time a sync
// takes, and the time until a reader sees the note), and seed 000's check
// that no write is lost.

// Writer writes one note to a target.
type Writer interface {
	// Write puts src at rel (a vault path such as probe/change-1.md).
	Write(ctx context.Context, c *Client, rel string, src []byte) error
	// Remove deletes what Write wrote; best effort.
	Remove(ctx context.Context, c *Client, rel string) error
}

// HTTPWriter writes notes through the target: PUT Path+rel with the
// Markdown as the body, DELETE to remove (the fixture's /admin/notes/, with
// the keyed class's Authorization from the target's headers). A server
// that syncs before it replies makes the write's time its sync's.
type HTTPWriter struct{ Path string }

func (w HTTPWriter) Write(ctx context.Context, c *Client, rel string, src []byte) error {
	return w.do(c, "PUT", rel, src)
}

func (w HTTPWriter) Remove(ctx context.Context, c *Client, rel string) error {
	return w.do(c, "DELETE", rel, nil)
}

func (w HTTPWriter) do(c *Client, method, rel string, body []byte) error {
	p := strings.TrimSuffix(w.Path, "/") + "/" + (&url.URL{Path: rel}).EscapedPath()
	req := c.target.Request(method, p, body, h1.Field{Name: "Content-Type", Value: "text/markdown"})
	if err := c.conn.Do(req, &c.resp); err != nil {
		return err
	}
	if c.resp.Status/100 != 2 {
		return fmt.Errorf("%s %s: status %d: %.200s", method, p, c.resp.Status, bytes.TrimSpace(c.resp.Body))
	}
	return nil
}

// FileWriter writes notes into the vault folder a server reads, and POSTs
// to SyncPath afterwards when the server needs telling (its reload).
type FileWriter struct{ Dir, SyncPath string }

func (w FileWriter) Write(ctx context.Context, c *Client, rel string, src []byte) error {
	p := filepath.Join(w.Dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p, src, 0o644); err != nil {
		return err
	}
	return w.sync(c)
}

func (w FileWriter) Remove(ctx context.Context, c *Client, rel string) error {
	if err := os.Remove(filepath.Join(w.Dir, filepath.FromSlash(rel))); err != nil {
		return err
	}
	return w.sync(c)
}

func (w FileWriter) sync(c *Client) error {
	if w.SyncPath == "" {
		return nil
	}
	if err := c.conn.Do(c.target.Request("POST", w.SyncPath, []byte{}), &c.resp); err != nil {
		return err
	}
	if c.resp.Status/100 != 2 {
		return fmt.Errorf("POST %s: status %d", w.SyncPath, c.resp.Status)
	}
	return nil
}

// Watch says where a change must show and how long to wait for it.
type Watch struct {
	Permalink   string // the page of a note at rel: "{path}" is rel without .md (default "/{path}")
	Sitemap     string // a sitemap that must list the page; empty: not watched
	SearchPath  string // a search that must find the note's token; empty: not watched
	SearchParam string // its query parameter (default q)
	Timeout     time.Duration
}

// NewClient is a client of t outside any run: for writes, and for
// watching them.
func NewClient(t *Target, timeout time.Duration) *Client {
	return newClient(t, timeout, 0, h1.NewBudget(h1.DefaultBudget), maphash.MakeSeed(), &atomic.Bool{}, &liveCounters{}, newSamples())
}

// Close drops the client's connection.
func (c *Client) Close() { c.conn.Close() }

// ChangeNote writes note number n and awaits it as reader sees it:
// WriteChange, then Await.
func ChangeNote(ctx context.Context, writer *Client, reader *Target, readTimeout time.Duration, w Writer, watch Watch,
	n int) result.Change {
	ch := WriteChange(ctx, writer, w, watch, n)
	Await(ctx, &ch, reader, readTimeout, watch)
	return ch
}

// WriteChange writes note number n, with a token of its own, through w.
func WriteChange(ctx context.Context, writer *Client, w Writer, watch Watch, n int) result.Change {
	token := changeToken()
	rel := fmt.Sprintf("probe/change-%d-%s.md", n, token)
	ch := result.Change{Path: rel, Token: token, Visible: map[string]time.Duration{}}
	tmpl := watch.Permalink
	if tmpl == "" {
		tmpl = "/{path}"
	}
	ch.Permalink = strings.ReplaceAll(tmpl, "{path}", strings.TrimSuffix(rel, ".md"))
	src := fmt.Sprintf("---\ntitle: \"probe change %d %s\"\ndate: %s\ntags: [probe]\n---\n# probe change %d\n\nA note probe "+
		"wrote to time a change: %s.\n",
		n, token, time.Now().Format("2006-01-02"), n, token)
	ch.Start = time.Now()
	if err := w.Write(ctx, writer, rel, []byte(src)); err != nil {
		ch.Err = err.Error()
		return ch
	}
	ch.Wrote = time.Since(ch.Start)
	return ch
}

// Await watches the places until each shows the change ch, or the timeout;
// those that never do are Lost. A change whose write failed is not awaited.
// Each place is watched at once on a connection of its own (of reader's,
// each request given readTimeout), so that a slow place (a large sitemap)
// never delays the time another shows the change.
func Await(ctx context.Context, ch *result.Change, reader *Target, readTimeout time.Duration, watch Watch) {
	if ch.Err != "" {
		return
	}
	places := map[string]func(*Client) bool{
		result.PlacePage: func(c *Client) bool { return shows(c, ch.Permalink, ch.Token) },
	}
	if watch.Sitemap != "" {
		places[result.PlaceSitemap] = func(c *Client) bool { return shows(c, watch.Sitemap, ch.Permalink+"<") }
	}
	if watch.SearchPath != "" {
		param := watch.SearchParam
		if param == "" {
			param = "q"
		}
		q := watch.SearchPath + "?" + url.Values{param: {ch.Token}}.Encode()
		places[result.PlaceSearch] = func(c *Client) bool { return shows(c, q, ch.Permalink) }
	}
	timeout := watch.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	// The timeout runs from the write's reply: a server that syncs before
	// it answers has shown nothing yet, and a slow sync is not a lost one.
	deadline := ch.Start.Add(ch.Wrote + timeout)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, seen := range places {
		wg.Go(func() {
			c := NewClient(reader, readTimeout)
			defer c.Close()
			visible, ok := awaitPlace(ctx, c, seen, deadline)
			mu.Lock()
			defer mu.Unlock()
			if ok {
				ch.Visible[name] = visible.Sub(ch.Start)
			} else {
				ch.Lost = append(ch.Lost, name)
			}
		})
	}
	wg.Wait()
	sort.Strings(ch.Lost)
}

// awaitPlace asks seen until it says yes (when: the time of that reply) or
// the deadline passes, at first every 5 ms, then less often, up to 100 ms.
func awaitPlace(ctx context.Context, c *Client, seen func(*Client) bool, deadline time.Time) (when time.Time, ok bool) {
	wait := 5 * time.Millisecond
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if seen(c) {
			return time.Now(), true
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
	return time.Time{}, false
}

// shows says whether GET path answers 200 with want in its body.
func shows(c *Client, path, want string) bool {
	status, body, err := c.Get(path)
	return err == nil && status == 200 && bytes.Contains(body, []byte(want))
}

// changeToken is a word no vault holds: letters only, so that any search
// tokenizer keeps it whole.
func changeToken() string {
	b := make([]byte, 10)
	for i := range b {
		b[i] = byte('a' + rand.IntN(26))
	}
	return "prb" + string(b)
}

// WriteLoad changes notes at Rate while a run measures reads (a run's
// LoadOptions.During): writes go one after another on schedule, and each
// change is awaited on a client of its own, so a slow sync delays the next
// write but never the watching.
type WriteLoad struct {
	Target  *Target // whom to write to: the keyed class's headers if writing needs them
	Reader  *Target // whom to watch as: the readers' class
	Writer  Writer
	Watch   Watch
	Rate    float64 // changes a second
	Timeout time.Duration

	mu      sync.Mutex
	changes []result.Change
}

// Run writes until ctx ends, then waits for every change to be seen or
// lost.
func (wl *WriteLoad) Run(ctx context.Context) {
	writer := NewClient(wl.Target, wl.Timeout)
	defer writer.Close()
	interval := time.Duration(float64(time.Second) / wl.Rate)
	var wg sync.WaitGroup
	next := time.Now()
	for n := 1; ctx.Err() == nil; n++ {
		ch := WriteChange(ctx, writer, wl.Writer, wl.Watch, n)
		wg.Go(func() {
			Await(context.WithoutCancel(ctx), &ch, wl.Reader, wl.Timeout, wl.Watch)
			wl.mu.Lock()
			wl.changes = append(wl.changes, ch)
			wl.mu.Unlock()
		})
		next = next.Add(interval)
		select {
		case <-time.After(time.Until(next)):
		case <-ctx.Done():
		}
	}
	wg.Wait()
}

// Changes are the changes made, in the order they were made.
func (wl *WriteLoad) Changes() []result.Change {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	out := append([]result.Change(nil), wl.changes...)
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// Cleanup removes the notes written; best effort.
func (wl *WriteLoad) Cleanup(ctx context.Context) {
	c := NewClient(wl.Target, wl.Timeout)
	defer c.Close()
	for _, ch := range wl.Changes() {
		if ch.Err == "" {
			wl.Writer.Remove(ctx, c, ch.Path)
		}
	}
}
