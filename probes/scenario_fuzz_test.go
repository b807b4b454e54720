package probes

import (
	"context"
	"errors"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/probehq/probe/lib/h1"
)

// FuzzScenarioValues feeds a target's reply to the scenario engine: the
// values extracted from it (by JSON path, regexp, or the reply's text
// itself) are put into a whole path, a path after the file's prefix, a
// query, a header and bodies. Whatever the reply: no panic; a path that is
// built stays a path of the target under the file's prefix, holds no dot
// segment and nothing a request line cannot carry; a header value the
// HTTP/1 client could not write is refused by it, before any byte is sent.
func FuzzScenarioValues(f *testing.F) {
	for _, seed := range []string{"http://", "https://", "http://x", "http://127.0.0.1:1/p?q", "//evil", "///evil", "../..", "%2e%2e/",
		"%252e%252e/", `..\x`, ".", "a/./b", "x\r\nX-Injected: 1\r\n\r\nGET /smuggled HTTP/1.1", "a\x00b", "\n", "é/ü?#",
		strings.Repeat("a", 9<<10), `["http://"]`, `{"a": "../.."}`, `{"a": {"b": [1, "//evil"]}}`, `[1e400]`, `{"a": "\u0000"}`,
		"javascript:x", "http://127.0.0.1:1/../x", "http://[::1", "?a=b", "#frag", "%", "%zz", ""} {
		f.Add([]byte(seed))
	}
	target := &Target{URL: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}}
	re := regexp.MustCompile(`(?s)"a":\s*"(.*?)"`)
	steps := []Step{
		{Name: "whole", Method: "GET", Path: "{{v}}"},
		{Name: "prefix", Method: "GET", Path: "/items/{{v}}"},
		{Name: "both", Method: "POST", Path: "/items/{{v}}.json?q={{v}}&r={{v}}", Body: `{"v": "{{v}}"}`},
		{Name: "header", Method: "GET", Path: "/h", Header: []h1.Field{{Name: "X-V", Value: "t={{v}}"}}, Body: "v={{v}}"},
	}
	sc := &Scenario{Name: "fuzz", Steps: steps}
	f.Fuzz(func(t *testing.T, body []byte) {
		reply := &Reply{Status: 200, Header: func(string) string { return string(body) }, Body: body}
		extract := &Step{Name: "a", Extract: []Extract{
			{Name: "j0", JSON: []any{0}}, {Name: "ja", JSON: []any{"a"}}, {Name: "jab", JSON: []any{"a", "b", 1}},
			{Name: "re", Regexp: re}, {Name: "h", Header: "X"}}}
		candidates := []string{string(body)}
		for _, e := range extract.Extract {
			vals := map[string]value{}
			one := &Step{Name: "a", Extract: []Extract{e}}
			if err := one.extract(context.Background(), reply, vals); err == nil {
				v := vals[e.Name].text
				if len(v) > maxValue {
					t.Fatalf("%s: a value of %d bytes", e.Name, len(v))
				}
				candidates = append(candidates, v)
			}
		}
		// All of a step's extractions at once find what each finds alone.
		all := map[string]value{}
		if err := extract.extract(context.Background(), reply, all); err == nil {
			for i, e := range extract.Extract {
				if all[e.Name].text != candidates[1+i] {
					t.Fatalf("%s: %q together, %q alone", e.Name, all[e.Name].text, candidates[1+i])
				}
			}
		}
		for _, v := range candidates {
			vals := map[string]value{"v": {text: v, from: "the reply of step a"}}
			for i, st := range steps {
				call, err := sc.call(target, i, vals, h1.DefaultMaxBody)
				if err != nil {
					var ve *valueError
					if !errors.As(err, &ve) || ve.hole != "v" || ve.from == "" {
						t.Fatalf("%s: %q: an error that does not name the value: %v", st.Name, v, err)
					}
					continue
				}
				checkBuilt(t, st, v, call.Req)
				// What Do would refuse, without a connection for each input.
				err = call.Req.Check(target.Addr())
				var re *h1.RequestError
				refusable := h1.CheckFieldValue(call.Req.HeaderValue("X-V")) != ""
				if refusable != errors.As(err, &re) {
					t.Fatalf("%s: %q: refused %v (%v), want %v", st.Name, v, errors.As(err, &re), err, refusable)
				}
				if re != nil {
					var resp h1.Response
					c := h1.Conn{Addr: target.Addr()}
					if err := c.Do(call.Req, &resp); !errors.As(err, &re) || c.Opened != 0 {
						t.Fatalf("%s: %q: Do: %v after %d connections, want it refused before any", st.Name, v, err, c.Opened)
					}
				}
				if re != nil {
					if got := st.refused(re, vals).Error(); !strings.Contains(got, "{{v}} from the reply of step a") {
						t.Fatalf("%s: %q: %s does not name the value", st.Name, v, got)
					}
				}
			}
		}
	})
}

// checkBuilt checks what a step built from v: a path of the target, under
// the file's prefix, that a request line can carry and that climbs nowhere.
func checkBuilt(t *testing.T, st Step, v string, req *h1.Request) {
	t.Helper()
	p := req.Path
	if reason := h1.CheckTarget(p); reason != "" {
		t.Fatalf("%s: %q: path %q %s", st.Name, v, p, reason)
	}
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") {
		t.Fatalf("%s: %q: path %q is not a path of the target", st.Name, v, p)
	}
	if prefix, _, _ := strings.Cut(st.Path, "{{"); !strings.HasPrefix(p, prefix) {
		t.Fatalf("%s: %q: path %q left the prefix %q", st.Name, v, p, prefix)
	}
	path, _, _ := strings.Cut(p, "?")
	if reason := climbs(path); reason != "" {
		t.Fatalf("%s: %q: path %q %s", st.Name, v, p, reason)
	}
	if u, err := url.Parse(p); err != nil || u.Host != "" || u.Scheme != "" {
		t.Fatalf("%s: %q: path %q reads as %v, %v", st.Name, v, p, u, err)
	}
}
