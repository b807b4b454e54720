package probes

import (
	"context"
	"fmt"
	"testing"
)

func TestShardClientsCoverTheFleetOnce(t *testing.T) {
	for _, total := range []int{4, 7, 32, 33} {
		next := 0
		for i := range 4 {
			n, first := Shard{i, 4}.Clients(total)
			if first != next || n < total/4 || n > total/4+1 {
				t.Fatalf("%d clients, shard %d: %d from %d (want from %d)", total, i, n, first, next)
			}
			next += n
		}
		if next != total {
			t.Errorf("%d clients: the shards have %d", total, next)
		}
	}
}

func TestShardSessionKeepsEveryNthKey(t *testing.T) {
	var calls StaticSession
	for k := range 10 {
		calls = append(calls, Call{Key: fmt.Sprintf("/k%d", k)}, Call{Key: fmt.Sprintf("/k%d", k)})
	}
	seen := map[string]int{}
	for i := range 3 {
		sess := shardSession(calls, Shard{i, 3}).(StaticSession)
		for _, c := range sess {
			seen[c.Key]++
		}
	}
	if len(seen) != 10 {
		t.Fatalf("the shards sent %d of 10 keys", len(seen))
	}
	for k, n := range seen {
		if n != 2 { // twice in the list, in one shard only
			t.Errorf("key %s sent %d times across the shards, want 2", k, n)
		}
	}
	few := StaticSession{{Key: "/a"}, {Key: "/b"}}
	if got := shardSession(few, Shard{2, 3}); len(got.(StaticSession)) != 2 {
		t.Error("fewer keys than shards: every shard must send them all")
	}
}

type idMicroload struct{ ids []int }

func (m *idMicroload) Name() string                                    { return "ids" }
func (m *idMicroload) Prepare(context.Context, *Target, *Client) error { return nil }
func (m *idMicroload) NewSession(_ context.Context, _ *Client, id int) (Session, error) {
	m.ids = append(m.ids, id)
	return StaticSession{{Key: "/"}}, nil
}

func TestShardSplitNumbersClientsAcrossTheFleet(t *testing.T) {
	inner := &idMicroload{}
	ml := Shard{1, 2}.Split(inner, 5)
	for id := range 2 {
		if _, err := ml.NewSession(context.Background(), nil, id); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(inner.ids) != "[5 6]" || ml.Name() != "ids" {
		t.Errorf("client ids %v, name %s", inner.ids, ml.Name())
	}
}
