package probes

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// Shard is one generator's part of a load that several machines send
// together: shard Index of Count (0 ≤ Index < Count).
type Shard struct {
	Index, Count int
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Clients is the shard's part of total clients (connections): total/Count,
// the first total%Count shards one more, and the number of the shard's
// first client among all of them, so that every client of the fleet has
// its own id as it would on one machine.
func (s Shard) Clients(total int) (n, first int) {
	n = total / s.Count
	extra := total % s.Count
	first = s.Index*n + min(s.Index, extra)
	if s.Index < extra {
		n++
	}
	return n, first
}

// Rate is the shard's part of the open loop's total rate.
func (s Shard) Rate(total float64) float64 { return total / float64(s.Count) }

// Split is ml as shard s sends it: client id of the shard is client
// first+id of the fleet, and of each client's requests the shard keeps
// every Count-th request key (see shardSession).
func (s Shard) Split(ml Microload, first int) Microload {
	return &shardMicroload{Microload: ml, shard: s, first: first}
}

type shardMicroload struct {
	Microload
	shard Shard
	first int
}

func (m *shardMicroload) NewSession(ctx context.Context, c *Client, id int) (Session, error) {
	sess, err := m.Microload.NewSession(ctx, c, m.first+id)
	if err != nil {
		return nil, err
	}
	return shardSession(sess, m.shard), nil
}

// shardSession keeps the calls of sess whose request key is the shard's:
// the distinct keys sorted, key k is shard k mod Count's. Keys are known
// only of a session that repeats a fixed list of calls (every microload
// but a scenario); a scenario's session, or one with fewer keys than
// shards, is sent whole by every shard.
func shardSession(sess Session, s Shard) Session {
	calls, ok := sess.(StaticSession)
	if !ok || s.Count == 1 {
		return sess
	}
	rank := map[string]int{}
	for _, c := range calls {
		rank[c.Key] = 0
	}
	if len(rank) < s.Count {
		return sess
	}
	keys := slices.Sorted(maps.Keys(rank))
	for i, k := range keys {
		rank[k] = i
	}
	var mine StaticSession
	for _, c := range calls {
		if rank[c.Key]%s.Count == s.Index {
			mine = append(mine, c)
		}
	}
	return mine
}
