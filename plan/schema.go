package plan

import (
	"encoding/json"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// SchemaID is where the schema of a target file is kept, for a file's
// "$schema".
const SchemaID = "https://raw.githubusercontent.com/probehq/probe/main/docs/probe.schema.json"

// Schema is the JSON Schema of a target file (docs/probe.schema.json),
// made from the model: the types' fields and their descriptions, with
// the forms of a value the reader takes for the types that have several.
func Schema() ([]byte, error) {
	scalar := []*jsonschema.Schema{{Type: "string"}, {Type: "number"}, {Type: "boolean"}}
	values := &jsonschema.Schema{AnyOf: append(scalar[:3:3], &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{AnyOf: scalar}})}
	status := &jsonschema.Schema{Type: "integer", Minimum: ptr(100.0), Maximum: ptr(599.0)}
	two := 2
	param := &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		values,
		{Type: "object", Required: []string{"range"}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
			Properties: map[string]*jsonschema.Schema{"range": {Type: "array", Description: "[from, to]: integers with from ≤ " +
				"to, fewer than 10,000 values",
				Items: &jsonschema.Schema{Type: "integer"}, MinItems: &two, MaxItems: &two}}},
		{Type: "object", Required: []string{"sitemap"}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
			Properties: map[string]*jsonschema.Schema{"sitemap": {Description: "true: the pages the sitemap lists; a " +
				"prefix: those under it",
				AnyOf: []*jsonschema.Schema{{Const: ptr[any](true)}, {Type: "string"}}}}},
	}}
	s, err := jsonschema.For[Plan](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[Values]():   values,
		reflect.TypeFor[Statuses](): {AnyOf: []*jsonschema.Schema{status, {Type: "array", Items: status}}},
		reflect.TypeFor[Params]():   {Type: "object", AdditionalProperties: param},
	}})
	if err != nil {
		return nil, err
	}
	s.Schema = "https://json-schema.org/draft/2020-12/schema"
	s.ID = SchemaID
	s.Title = "probe target file"
	s.Description = "A server's microloads and scenarios, for probe --file (docs/DESIGN.md, \"The target file\")."
	noNull(s)
	one := 1
	steps := s.Properties["scenarios"].Items.Properties["steps"]
	for _, list := range []*jsonschema.Schema{s.Properties["microloads"], s.Properties["scenarios"], steps} {
		list.MinItems = &one
	}
	ml := s.Properties["microloads"].Items
	var uses []any
	for _, n := range Names() {
		uses = append(uses, n)
	}
	ml.Properties["use"].Enum = uses
	ex := steps.Items.Properties["extract"].AdditionalProperties
	ex.MinProperties, ex.MaxProperties = &one, &one
	s.Properties["mix"].AdditionalProperties.ExclusiveMinimum = ptr(0.0)
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// noNull makes "null or X" (a Go slice or pointer) X: the reader takes
// no null anywhere.
func noNull(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	for _, p := range s.Properties {
		noNull(p)
	}
	noNull(s.Items)
	noNull(s.AdditionalProperties)
	for _, a := range s.AnyOf {
		noNull(a)
	}
}

func ptr[T any](v T) *T { return &v }
