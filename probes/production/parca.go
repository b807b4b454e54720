package production

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/probehq/probe/lib/pprofio"
	"github.com/probehq/probe/lib/textline"
)

// Parca's API module is not served by the module proxy here: probe speaks
// Connect's unary JSON protocol over net/http (POST /SERVICE/METHOD,
// Content-Type application/json, the message in protobuf's JSON mapping),
// from parca/query/v1alpha1/query.proto.

const parcaService = "/parca.query.v1alpha1.QueryService/"

// parcaQueryRequest is QueryRequest: mode MODE_MERGE, the merge options
// and report_type REPORT_TYPE_PPROF.
type parcaQueryRequest struct {
	Mode       string     `json:"mode"`
	Merge      parcaMerge `json:"merge"`
	ReportType string     `json:"reportType"`
}

type parcaMerge struct {
	Query string `json:"query"` // TYPE_ID{matchers}
	Start string `json:"start"` // google.protobuf.Timestamp: RFC 3339
	End   string `json:"end"`
}

// parcaQueryResponse is the part of QueryResponse probe reads: the
// report's pprof bytes (base64 in JSON).
type parcaQueryResponse struct {
	Pprof []byte `json:"pprof"`
}

type parcaValuesRequest struct {
	LabelName string   `json:"labelName"`
	Match     []string `json:"match"`
	Start     string   `json:"start"`
	End       string   `json:"end"`
}

type parcaValuesResponse struct {
	LabelValues []string `json:"labelValues"`
}

// parcaMerge calls QueryService/Query for the merged profile as pprof.
func (s *Source) parcaMerge(ctx context.Context, typeID string, q Query) ([]byte, error) {
	req := parcaQueryRequest{Mode: "MODE_MERGE", ReportType: "REPORT_TYPE_PPROF",
		Merge: parcaMerge{Query: typeID + q.Selector(Parca), Start: rfc3339(q.Start), End: rfc3339(q.End)}}
	var res parcaQueryResponse
	if err := s.parcaCall(ctx, "Query", req, &res); err != nil {
		return nil, err
	}
	return res.Pprof, nil
}

// parcaServices calls QueryService/Values for the job label.
func (s *Source) parcaServices(ctx context.Context, start, end time.Time) ([]string, error) {
	var res parcaValuesResponse
	err := s.parcaCall(ctx, "Values", parcaValuesRequest{LabelName: ServiceLabel[Parca], Match: []string{}, Start: rfc3339(start),
		End: rfc3339(end)}, &res)
	return res.LabelValues, err
}

// connectError is a Connect error body: {"code": "not_found", "message": …}.
type connectError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// parcaCall is one Connect unary call in JSON, its reply read within
// MaxBytes.
func (s *Source) parcaCall(ctx context.Context, method string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.BaseURL+parcaService+method, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = s.Header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connect-Protocol-Version", "1")
	res, err := s.client().Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	// JSON carries pprof bytes as base64: a third more than the profile.
	raw, err := pprofio.ReadAll(res.Body, s.maxBytes()*4/3+4096)
	if err != nil {
		return fmt.Errorf("%s: %v", method, err)
	}
	if res.StatusCode != http.StatusOK {
		var ce connectError
		if json.Unmarshal(raw, &ce) == nil && ce.Code != "" {
			return fmt.Errorf("%s: %s: %s", method, textline.Of(ce.Code, 40), textline.Of(ce.Message, 200))
		}
		return fmt.Errorf("%s: HTTP %s: %s", method, textline.Of(res.Status, 60), textline.Of(string(raw), 200))
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s: not a Connect JSON reply: %v", method, err)
	}
	return nil
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
