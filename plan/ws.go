package plan

import (
	"slices"
	"strings"
)

// WS is how probe ws speaks to the target's real-time path: where a
// connection upgrades, how it authenticates, the rooms it joins and how
// events are published. probe ws's flags, given, override each field.
type WS struct {
	Path          string  `json:"path,omitempty" jsonschema:"where a connection upgrades, with {room} and {token} (default /ws?room={room})"`
	Auth          string  `json:"auth,omitempty" jsonschema:"how the token is sent: header, query, message (hello first) or none (default query)"`
	Token         string  `json:"token,omitempty" jsonschema:"the token each connection authenticates with"`
	TokenEnv      string  `json:"tokenEnv,omitempty" jsonschema:"the environment variable that holds the token (instead of token)"`
	Hello         string  `json:"hello,omitempty" jsonschema:"the first message of each connection ({token}, {room})"`
	Ready         *string `json:"ready,omitempty" jsonschema:"what a message says when the server has subscribed a connection; an empty string takes the upgrade for it"`
	Rooms         Values  `json:"rooms,omitempty" jsonschema:"the rooms' names ({room}): connection i joins rooms[i mod len(rooms)]"`
	Publish       string  `json:"publish,omitempty" jsonschema:"how events are published: http (a request to publishPath) or ws (a message on a connection to publishPath)"`
	PublishPath   string  `json:"publishPath,omitempty" jsonschema:"where events are published; an HTTP one may hold {room} and {event}"`
	PublishBody   string  `json:"publishBody,omitempty" jsonschema:"the body or message of an event, with {event} (probe's marker) and {room}"`
	PublishMethod string  `json:"publishMethod,omitempty" jsonschema:"the HTTP publish's method: POST, PUT or PATCH (default POST)"`
}

func (w walker) ws(v any, at string) (*WS, error) {
	m, err := w.object(v, at, "path", "auth", "token", "tokenEnv", "hello", "ready", "rooms",
		"publish", "publishPath", "publishBody", "publishMethod")
	if err != nil {
		return nil, err
	}
	x := &WS{}
	for _, f := range []struct {
		key string
		to  *string
	}{{"path", &x.Path}, {"auth", &x.Auth}, {"token", &x.Token}, {"tokenEnv", &x.TokenEnv}, {"hello", &x.Hello},
		{"publish", &x.Publish}, {"publishPath", &x.PublishPath}, {"publishBody", &x.PublishBody}, {"publishMethod", &x.PublishMethod}} {
		if *f.to, err = w.str(m, f.key, at); err != nil {
			return nil, err
		}
	}
	if _, ok := m["ready"]; ok {
		s, err := w.str(m, "ready", at)
		if err != nil {
			return nil, err
		}
		x.Ready = &s
	}
	if _, ok := m["rooms"]; ok {
		if x.Rooms, err = w.strs(m, "rooms", at); err != nil {
			return nil, err
		}
		if len(x.Rooms) == 0 {
			return nil, w.fail(join(at, "rooms"), "want at least one room's name")
		}
		for i, r := range x.Rooms {
			if r == "" || len(r) > 200 || slices.Contains(x.Rooms[:i], r) {
				return nil, w.fail(join(at, "rooms"), "%q: want names of 1 to 200 bytes, each once", r)
			}
		}
	}
	x.PublishMethod = strings.ToUpper(x.PublishMethod)
	switch {
	case !slices.Contains([]string{"", "header", "query", "message", "none"}, x.Auth):
		return nil, w.fail(join(at, "auth"), "%q is no way to send the token (want header, query, message or none)", x.Auth)
	case !slices.Contains([]string{"", "http", "ws"}, x.Publish):
		return nil, w.fail(join(at, "publish"), "%q: want http or ws", x.Publish)
	case !slices.Contains([]string{"", "POST", "PUT", "PATCH"}, x.PublishMethod):
		return nil, w.fail(join(at, "publishMethod"), "%q: want POST, PUT or PATCH", x.PublishMethod)
	case x.Path != "" && x.Path[0] != '/':
		return nil, w.fail(join(at, "path"), "%q must start with /", x.Path)
	case x.PublishPath != "" && x.PublishPath[0] != '/':
		return nil, w.fail(join(at, "publishPath"), "%q must start with /", x.PublishPath)
	case x.PublishBody != "" && !strings.Contains(x.PublishBody, "{event}"):
		return nil, w.fail(join(at, "publishBody"), "want {event} in it (the marker probe finds in what arrives)")
	case x.Token != "" && x.TokenEnv != "":
		return nil, w.fail(at, "token and tokenEnv: want one of them")
	case x.Auth == "message" && x.Hello == "":
		return nil, w.fail(join(at, "hello"), "auth message needs hello, the first message ({token}, {room})")
	}
	return x, nil
}
