package report

// Stream is what probe measured of a server-streaming gRPC method: the
// messages its calls got (a range and its median), and, when its first
// stream did not end within the time probe gives it, that it is a watch,
// measured by its messages per second and its time to first message.
type Stream struct {
	Method   string         `json:"method"`
	Calls    int64          `json:"calls"` // calls whose messages were counted
	Messages StreamMessages `json:"messages"`
	Watch    *Watch         `json:"watch,omitempty"`
}

// StreamMessages are the messages a call got, over the counted calls.
type StreamMessages struct {
	Fewest int   `json:"fewest"`
	Median int   `json:"median"`
	Most   int   `json:"most"`
	Total  int64 `json:"total"`
}

// Watch is a stream that does not end within the call.
type Watch struct {
	After               float64  `json:"after_s"`          // the first stream was open this long (--timeout, or the profile's window)
	Span                float64  `json:"span_s"`           // each call of the load held the watch this long (its grpc-timeout)
	FirstMessageMS      *float64 `json:"first_message_ms"` // the first stream's time to its first message; null: none came
	FirstStreamMessages int      `json:"first_stream_messages"`
	MessagesPerSecond   float64  `json:"messages_per_s"` // a stream's: a call's messages over its span
	// The load's calls (each a span of the watch): their time to first
	// message, median and slowest (null: none got one), and those with none.
	CallsFirstMessageMedianMS *float64 `json:"calls_first_message_median_ms"`
	CallsFirstMessageMaxMS    *float64 `json:"calls_first_message_max_ms"`
	CallsWithoutMessage       int64    `json:"calls_without_message"`
}
