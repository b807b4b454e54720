// Package plan is one model of what to load: a target, its microloads and
// its scenarios. The command line fills it from flags, and a target file
// (Jsonnet or JSON, docs/DESIGN.md "The target file", the schema
// docs/probe.schema.json) fills the same types; Build turns an entry into
// the microload probes runs. An error in a file is one line that names the
// place: "probe.jsonnet: microloads[2].checks: unknown key "stauts"".
package plan

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/probes"
)

// Plan is what to load: a target file's whole content.
type Plan struct {
	Schema     string             `json:"$schema,omitempty" jsonschema:"this format's JSON Schema, for editors (probe ignores it)"`
	Target     string             `json:"target,omitempty" jsonschema:"the server's URL (--target overrides it)"`
	Pprof      string             `json:"pprof,omitempty" jsonschema:"where --profile reads the target's profiles (default TARGET/debug/pprof/; --pprof overrides it)"`
	Headers    map[string]string  `json:"headers,omitempty" jsonschema:"header fields sent with every request"`
	Microloads []Microload        `json:"microloads,omitempty" jsonschema:"the microloads: a named one (use) with its options, or a request of its own; at least one unless there are scenarios"`
	Scenarios  []Scenario         `json:"scenarios,omitempty" jsonschema:"users' sequences of requests, for probe ramp"`
	Mix        map[string]float64 `json:"mix,omitempty" jsonschema:"probe ramp's mix: names of scenarios and microloads, and their weights (above 0)"`
	Agents     *Agents            `json:"agents,omitempty" jsonschema:"probe agents: the MCP server's write, search and read tools"`
	WS         *WS                `json:"ws,omitempty" jsonschema:"probe ws: the real-time path's upgrade, authentication, rooms and publishing"`

	File   string     `json:"-"` // the file it was read from
	Header []h1.Field `json:"-"` // Headers, checked, in name order
}

// Microload is one microload: a named one of the table (Use) with the
// options its command's flags give, or a request of the file's own
// (method, path, params, headers, body, checks).
type Microload struct {
	Name string `json:"name,omitempty" jsonschema:"unique; names the report's folder (default: use)"`
	Use  string `json:"use,omitempty" jsonschema:"a named microload; without it the entry is a request of its own"`

	Path       string `json:"path,omitempty" jsonschema:"the endpoint; a request's path may hold {holes} its params fill"`
	Sitemap    string `json:"sitemap,omitempty" jsonschema:"page, feed, search: the sitemap to draw pages from"`
	Feeds      Values `json:"feeds,omitempty" jsonschema:"feed: the feeds to load"`
	QueryParam string `json:"queryParam,omitempty" jsonschema:"search: the query parameter (default q)"`
	Bodies     Values `json:"bodies,omitempty" jsonschema:"notequery: the queries to POST, each a request key"`
	Method     string `json:"method,omitempty" jsonschema:"a request's method (default GET); notequery: POST or GET"`
	Params     Params `json:"params,omitempty" jsonschema:"values a request takes: a value, a list, {range: [from, to]} or {sitemap: true | '/prefix/'}; notequery GET: one parameter"`
	// Param is notequery GET's parameter as --param gives it
	// (name=v1,v2,…); a file's params fill it.
	Param   string            `json:"-"`
	Headers map[string]string `json:"headers,omitempty" jsonschema:"a request's header fields"`
	Body    string            `json:"body,omitempty" jsonschema:"a request's body"`
	Checks  *Checks           `json:"checks,omitempty" jsonschema:"what a reply must be (default: a status below 400)"`

	// A gRPC call of its own (plan/grpc.go): probe grpc's --call, --data
	// and --proto.
	GRPC  string `json:"grpc,omitempty" jsonschema:"a gRPC call of its own: package.Service/Method (the target needs --http2)"`
	Data  string `json:"data,omitempty" jsonschema:"a gRPC call's request message as JSON; params fill its {holes}"`
	Proto Values `json:"proto,omitempty" jsonschema:"a gRPC call's .proto files, for a server without reflection"`

	// An MCP tool's call of its own (plan/mcp.go): tools/call over
	// streamable HTTP, a session per client; path is the MCP endpoint.
	MCP       string `json:"mcp,omitempty" jsonschema:"an MCP tool's call of its own: the tool's name (path: the MCP endpoint, default /mcp)"`
	Arguments string `json:"arguments,omitempty" jsonschema:"an MCP tool's arguments as a JSON object; params fill its {holes}"`

	request    *probes.HTTP // a request of its own, as read and checked
	grpc       bool         // a gRPC call of its own
	grpcHeader []h1.Field
	mcp        bool // an MCP tool's call of its own
	mcpHeader  []h1.Field
}

// Checks are what a reply must be.
type Checks struct {
	Status      Statuses `json:"status,omitempty" jsonschema:"a status or a list of them (default: below 400)"`
	ContentType string   `json:"contentType,omitempty" jsonschema:"a substring of the Content-Type"`
	Contains    Values   `json:"contains,omitempty" jsonschema:"substrings the reply holds"`
	NotContains Values   `json:"notContains,omitempty" jsonschema:"substrings the reply does not hold"`
	JSON        string   `json:"json,omitempty" jsonschema:"a path that must be in the JSON reply: a.b[0].c"`

	check func(*probes.Reply) error
}

// Scenario is a user's sequence of requests (probe ramp).
type Scenario struct {
	Name   string            `json:"name" jsonschema:"unique among scenarios and microloads, without spaces or slashes"`
	Values map[string]Values `json:"values,omitempty" jsonschema:"values by name; session n takes value n (cycling) as {{name}}"`
	Steps  []Step            `json:"steps" jsonschema:"the requests, in order"`

	Probe *probes.Scenario `json:"-"` // as probes runs it, checked
}

// Step is one request of a scenario; its path, body and header values may
// hold {{name}}.
type Step struct {
	Name    string             `json:"name,omitempty" jsonschema:"default stepN"`
	Method  string             `json:"method,omitempty" jsonschema:"default GET"`
	Path    string             `json:"path,omitempty" jsonschema:"starts with / (or a {{value}} that is one); a step has a path or grpc"`
	Headers map[string]string  `json:"headers,omitempty"`
	Body    string             `json:"body,omitempty"`
	Checks  *Checks            `json:"checks,omitempty"`
	Extract map[string]Extract `json:"extract,omitempty" jsonschema:"values taken from the reply, by name, for later steps"`
	// A gRPC step (over --http2) in place of method, path and body.
	GRPC  string   `json:"grpc,omitempty" jsonschema:"a gRPC call in place of method, path and body: package.Service/Method"`
	Data  string   `json:"data,omitempty" jsonschema:"a gRPC step's request message as JSON; {{value}}s are JSON-escaped"`
	Proto []string `json:"proto,omitempty" jsonschema:"a gRPC step's .proto files, for a server without reflection"`
}

// Extract takes a value from a reply: one of json, header or regexp.
type Extract struct {
	JSON   string `json:"json,omitempty" jsonschema:"a path into the JSON reply: hits[0].path"`
	Header string `json:"header,omitempty" jsonschema:"a header's name"`
	Regexp string `json:"regexp,omitempty" jsonschema:"a regexp over the body; its first group is the value"`
}

// Values are a file's strings: a string, a number, a boolean, or a list of
// them (numbers and booleans become their text).
type Values []string

// Statuses are HTTP statuses: one, or a list.
type Statuses []int

// Params are a request's parameters, by name.
type Params []probes.Param

// Evaluator turns a Jsonnet file into its JSON. The command line evaluates
// it in a guarded child process; plan itself runs nothing.
type Evaluator func(ctx context.Context, path string) ([]byte, error)

// Options say how Read evaluates a Jsonnet file.
type Options struct {
	Jsonnet Evaluator // nil: a Jsonnet file is refused
}

// IsJsonnet says whether a file is Jsonnet by its name.
func IsJsonnet(path string) bool {
	return strings.HasSuffix(path, ".jsonnet") || strings.HasSuffix(path, ".libsonnet")
}

// Read reads and checks a target file.
func Read(ctx context.Context, path string, o Options) (*Plan, error) {
	var src []byte
	var err error
	switch {
	case !IsJsonnet(path):
		src, err = os.ReadFile(path)
	case o.Jsonnet == nil:
		err = errors.New(path + ": no Jsonnet evaluator (give the file as JSON)")
	default:
		src, err = o.Jsonnet(ctx, path)
	}
	if err != nil {
		return nil, err
	}
	return Parse(path, src)
}
