package production

import (
	"context"
	"time"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"google.golang.org/protobuf/proto"
)

// Pyroscope is spoken with the generated Connect client of its official
// API module (github.com/grafana/pyroscope/api), protobuf on the wire.

func (s *Source) pyroscope() querierv1connect.QuerierServiceClient {
	return querierv1connect.NewQuerierServiceClient(s.client(), s.BaseURL, connect.WithReadMaxBytes(int(s.maxBytes())))
}

// pyroscopeMerge calls QuerierService/SelectMergeProfile: its answer is
// the merged profile, a google.v1.Profile (pprof's own message).
func (s *Source) pyroscopeMerge(ctx context.Context, typeID string, q Query) ([]byte, error) {
	req := connect.NewRequest(&querierv1.SelectMergeProfileRequest{
		ProfileTypeID: typeID, LabelSelector: q.Selector(Pyroscope),
		Start: q.Start.UnixMilli(), End: q.End.UnixMilli(),
	})
	s.setHeaders(req.Header())
	res, err := s.pyroscope().SelectMergeProfile(ctx, req)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(res.Msg)
}

// pyroscopeServices calls QuerierService/LabelValues for service_name.
func (s *Source) pyroscopeServices(ctx context.Context, start, end time.Time) ([]string, error) {
	req := connect.NewRequest(&typesv1.LabelValuesRequest{Name: ServiceLabel[Pyroscope], Start: start.UnixMilli(), End: end.UnixMilli()})
	s.setHeaders(req.Header())
	res, err := s.pyroscope().LabelValues(ctx, req)
	if err != nil {
		return nil, err
	}
	return res.Msg.Names, nil
}

func (s *Source) setHeaders(h interface{ Add(k, v string) }) {
	for k, vs := range s.Header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
}
