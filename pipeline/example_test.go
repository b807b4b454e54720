package pipeline_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"time"

	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// A program of its own loads one endpoint of a server, analyses the run
// and writes the report folder, as `probe http --path /hello` does.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)

	rules, _ := pipeline.LoadRules("", nil) // the built-in catalog
	p := pipeline.New(pipeline.Options{Rules: rules})
	rep, _, err := p.Measure(context.Background(), "hello",
		&probes.HTTP{Method: "GET", Path: "/hello"},
		&probes.Target{URL: u},
		probes.LoadOptions{Concurrency: 2, Duration: 200 * time.Millisecond, Timeout: time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	var doc report.Document = rep // report.json, report.md, latency.hgrm
	_ = doc                       // p.Write(dir, doc) writes the folder
	fmt.Println(rep.Microload, rep.Latency.Requests > 0, rep.Latency.Errors)
	// Output: http true 0
}
