package plan

import (
	"strings"
	"testing"
)

func TestWSFromFile(t *testing.T) {
	p, err := Parse("probe.json", []byte(`{"ws": {"path": "/live?room={room}", "auth": "header", "tokenEnv": "LIVE_TOKEN",
	  "ready": "", "rooms": ["tag:a", "tag:b"], "publish": "http", "publishPath": "/admin/notes/live/{room}.md",
	  "publishBody": "{event}", "publishMethod": "put"}}`))
	if err != nil {
		t.Fatal(err)
	}
	x := p.WS
	if x.Path != "/live?room={room}" || x.Auth != "header" || x.TokenEnv != "LIVE_TOKEN" || x.Ready == nil || *x.Ready != "" ||
		strings.Join(x.Rooms, ",") != "tag:a,tag:b" || x.PublishMethod != "PUT" || x.PublishPath != "/admin/notes/live/{room}.md" {
		t.Errorf("ws %+v", x)
	}
	if p, err := Parse("probe.json", []byte(`{"ws": {}}`)); err != nil || p.WS == nil || p.WS.Ready != nil {
		t.Errorf("an empty ws: %v, %+v", err, p)
	}
	for src, want := range map[string]string{
		`{"ws": {"auth": "cookie"}}`: `probe.json: ws.auth: "cookie" is no way to send the token (want header, ` +
			`query, message or none)`,
		`{"ws": {"rooms": []}}`:                    `ws.rooms: want at least one room's name`,
		`{"ws": {"rooms": ["a", "a"]}}`:            `ws.rooms: "a": want names of 1 to 200 bytes, each once`,
		`{"ws": {"publish": "sse"}}`:               `ws.publish: "sse": want http or ws`,
		`{"ws": {"publishMethod": "GET"}}`:         `ws.publishMethod: "GET": want POST, PUT or PATCH`,
		`{"ws": {"path": "ws"}}`:                   `ws.path: "ws" must start with /`,
		`{"ws": {"publishBody": "{}"}}`:            `ws.publishBody: want {event} in it`,
		`{"ws": {"token": "a", "tokenEnv": "B"}}`:  `ws: token and tokenEnv: want one of them`,
		`{"ws": {"auth": "message"}}`:              `ws.hello: auth message needs hello`,
		`{"ws": {"room": ["a"]}}`:                  `ws: unknown key "room"`,
		`{"ws": {"rooms": "a", "publishPath": 3}}`: `ws.publishPath: want a string, got a number`,
	} {
		if _, err := Parse("probe.json", []byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", src, err, want)
		}
	}
}
