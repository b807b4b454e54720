package result

// Bounds of a run across machines, which --shard holds to and probe merge
// reads a shard's report within.
const (
	// MaxShards bounds N: past it a shard's part is a rounding error.
	MaxShards = 10_000
	// ShardSeconds bounds a shard's per-second series: a run's own bound.
	ShardSeconds = MaxSeconds
	// MaxShardRate bounds a shard's requests per second: --rate's bound
	// for the whole fleet.
	MaxShardRate = 10_000_000
)
