package fuzzreport

import (
	"testing"
	"time"

	"github.com/probehq/probe/probes/fuzz"
	"github.com/probehq/probe/report/internal/reporttest"
	"github.com/probehq/probe/result"
)

// goldenFuzzHTTP is a probe fuzz http run with a header and a JSON body
// that found a panic and then ended early: the parts TestGoldenFuzz's
// notequery run does not have.
func goldenFuzzHTTP(t *testing.T) *FuzzReport {
	tmpl, err := fuzz.NewTemplate("POST", "/items?page={int}", []result.FuzzField{{Name: "X-Tenant", Value: "{str}"}}, `{"name": {str}}`)
	if err != nil {
		t.Fatal(err)
	}
	in := result.FuzzInput{Template: 0, Values: []string{"-1", "a", ""}}
	res := &result.Fuzz{Target: "http://127.0.0.1:41001", Templates: []result.FuzzTemplate{tmpl},
		Search: 7 * time.Second, Shrinking: 2 * time.Second, Inputs: 310, Statuses: map[int]int64{200: 280, 400: 20},
		Failures: map[string]int64{"400 bad page": 20, "no reply: connection reset by peer": 10}, Restarts: 10, Hostile: 20, Extremes: 12,
		Unsent: 3,
		Crashes: []*result.FuzzCrash{{Class: "panic", Evidence: "panic: runtime error: index out of range [-1]",
			Frames: []string{"main.listItems", "main.main.func1"},
			Stderr: "panic: runtime error: index out of range [-1]\n\ngoroutine 7 [running]:\nmain.listItems(...)\n",
			Input:  in, Original: result.FuzzInput{Template: 0, Values: []string{"-90210", "tenant-7", "widget"}},
			Method: "POST", Path: "/items?page=-1", Header: []result.FuzzField{{Name: "X-Tenant", Value: "a"}}, Body: []byte(`{"name": ""}`),
			Hole: "{int}", Endpoint: "/items", FoundAfter: 1200 * time.Millisecond, Seen: 10, Confirmed: true, Trials: 14,
			Shrink: "shrunk from 21 to 5 bytes of values in 14 trials"}},
		Ended: "the target failed to restart 3 times in a row",
	}
	return FromFuzz(res, FuzzSetting{Name: "fuzz http", Concurrency: 2, MemLimit: 3 << 30,
		Server: "(ulimit -d 3145728; PORT=8080 ./server -addr 127.0.0.1:8080)", ReproBase: "http://127.0.0.1:8080"})
}

func TestGoldenFuzzHTTP(t *testing.T) {
	r := goldenFuzzHTTP(t)
	reporttest.GoldenJSON(t, "fuzz-http.json", r)
	reporttest.Golden(t, "fuzz-http.md", r.Markdown())
	reporttest.Golden(t, "fuzz-http.table", reporttest.Table(r))
	files, _ := r.Files()
	reporttest.Golden(t, "fuzz-http.crasher", string(files["crashers/1-panic.txt"]))
}

func TestGoldenFuzz(t *testing.T) {
	tmpl, err := fuzz.ParseTemplate("GET", "/q/link-walk?depth={int}", "")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := fuzz.ParseTemplate("POST", "/query", `{"query": "{jsonnet}"}`)
	res := &result.Fuzz{Target: "http://127.0.0.1:41000", Templates: []result.FuzzTemplate{tmpl, body},
		Search: 20 * time.Second, Shrinking: 12 * time.Second, Inputs: 800, Statuses: map[int]int64{200: 600, 422: 190},
		Failures: map[string]int64{"422 RUNTIME ERROR: max stack frames exceeded.": 190, "no reply: EOF": 10}, Restarts: 10, Hostile: 190,
		Crashes: []*result.FuzzCrash{{Class: "stack-overflow", Evidence: "fatal error: stack overflow",
			Frames: []string{"github.com/google/go-jsonnet.(*interpreter).evaluate"},
			Stderr: "runtime: goroutine stack exceeds 67108864-byte limit\nfatal error: stack overflow\n",
			Input:  result.FuzzInput{Template: 0, Values: []string{"4378"}}, Original: result.FuzzInput{Template: 0, Values: []string{"30000000"}},
			Method: "GET", Path: "/q/link-walk?depth=4378", Endpoint: "/q/link-walk", FoundAfter: 900 * time.Millisecond, Seen: 9,
			Confirmed: true, Shrink: "shrunk from 8 to 4 bytes of values in 19 trials, until bisection and delta debugging found " +
				"nothing smaller that crashes the same way",
			Also: []result.FuzzInput{{Template: 1, Values: []string{"local f(n) = f(n + 1) tailstrict; f(0)"}}}}},
	}
	r := FromFuzz(res, FuzzSetting{Name: "fuzz notequery", Concurrency: 4, MemLimit: 3 << 30,
		Server: "probe fixture serve --mode per-request --notes 60 --addr 127.0.0.1:8080", ReproBase: "http://127.0.0.1:8080",
		Header: map[string]string{"Content-Type": "application/json"}})
	reporttest.Golden(t, "fuzz.md", r.Markdown())
	reporttest.Golden(t, "fuzz.table", reporttest.Table(r))
	files, _ := r.Files()
	reporttest.Golden(t, "fuzz.crasher", string(files["crashers/1-stack-overflow.txt"]))
}
