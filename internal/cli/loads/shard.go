package loads

import (
	"fmt"
	"io"
	"strings"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"
)

// --shard I/N: one generator's part of a load several machines send
// together (probes.Shard says how clients, rate and request keys split);
// probe merge makes the shards' reports one.

// checkShard refuses what one shard cannot do for the fleet.
func (c *loadCommand) checkShard() error {
	switch {
	case c.load.Shard.Spec == "" && c.load.Shard.Count == 0:
		return nil
	case c.target.Target == "" && c.target.File == "":
		return shared.UsageError{Msg: "--shard: give --target: every shard must load the same server, not a fixture of its own"}
	case c.writes.Rate > 0:
		return shared.UsageError{Msg: "--during-writes checks one machine's reads against its own writes: it does not shard"}
	}
	return nil
}

// shardOptions are o as this shard runs it: its part of the clients and
// the rate; only shard 0 profiles the target (N generators fetching
// profiles would overlap and load it).
func (c *loadCommand) shardOptions(stderr io.Writer, o probes.LoadOptions) probes.LoadOptions {
	f := &c.load.Shard
	if !f.On {
		return o
	}
	f.Repeated = map[string][]string{"header": c.request.Headers}
	total, totalRate := o.Concurrency, o.Rate
	o.Concurrency, f.First = f.Shard.Clients(total)
	if o.Rate > 0 {
		o.Rate = f.Shard.Rate(totalRate)
	}
	if f.RunID == "" {
		f.RunID = "cfg-" + strings.TrimPrefix(report.ConfigHash(f.Config()), "sha256:")[:12]
	}
	part := fmt.Sprintf("%d of %d clients", o.Concurrency, total)
	if o.Rate > 0 {
		part += fmt.Sprintf(", %g of %g requests/s", o.Rate, totalRate)
	}
	fmt.Fprintf(stderr, "probe: shard %v of run %s: %s\n", f.Shard, f.RunID, part)
	if o.Profile != nil && f.Shard.Index != 0 {
		fmt.Fprintf(stderr, "probe: shard %v: --profile is ignored: only shard 0 profiles the target\n", f.Shard)
		o.Profile = nil
	}
	return o
}

// attachShard makes rep this shard's report of run.
func (c *loadCommand) attachShard(rep *report.Run, run *result.Run, o probes.LoadOptions) error {
	f := &c.load.Shard
	if !f.On {
		return nil
	}
	return rep.AttachShard(run, report.Shard{Index: f.Shard.Index, Count: f.Shard.Count, RunID: f.RunID, Config: f.Config(),
		Clients: o.Concurrency, Rate: o.Rate, Profiled: run.Profiles != nil})
}
