package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// --shard I/N: one generator's part of a load several machines send
// together (probes.Shard says how clients, rate and request keys split);
// probe merge makes the shards' reports one.

// shardFlags are --shard, --shards and --run-id (the load commands).
type shardFlags struct {
	spec  string // --shard I/N
	count int    // --shards N: the index is JOB_COMPLETION_INDEX's
	runID string
	fs    *flag.FlagSet // the command's flags: the configuration every shard must share
	// repeated are the values of the repeatable flags (--header), which
	// the flag set does not show.
	repeated map[string][]string

	on    bool
	shard probes.Shard
	first int // the shard's first client among all
}

// notLoadConfig are the flags a shard may set as it likes: where its
// report goes, what fails it, how it profiles (only shard 0 does).
var notLoadConfig = map[string]bool{"out": true, "force": true, "json": true, "fail-on": true, "shard": true, "shards": true,
	"run-id": true, "profile": true, "pprof": true, "rules": true, "wall": true, "max-profile": true, "pin": true}

// secretConfig are flags whose values go into report.json only as a hash.
var secretConfig = map[string]bool{"key": true, "header": true}

func (f *shardFlags) register(fs *flag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.spec, "shard", "", "`I/N`: this generator is shard I of N (0 ≤ I < N): its part of the clients, the rate and the request keys; probe merge joins the shards' reports")
	fs.IntVar(&f.count, "shards", 0, "`N` shards, this one's index from JOB_COMPLETION_INDEX (as a Kubernetes Indexed Job sets it)")
	fs.StringVar(&f.runID, "run-id", os.Getenv("PROBE_RUN_ID"), "with --shard: the run's id, the same on every shard (default $PROBE_RUN_ID, else made from the configuration)")
}

// validate reads the shard and checks that l's load can be split into N.
func (f *shardFlags) validate(l *loadFlags) error {
	switch {
	case f.spec == "" && f.count == 0:
		return nil
	case f.spec != "" && f.count != 0:
		return usageError{"give --shard I/N or --shards N, not both"}
	}
	if f.spec != "" {
		i, n, ok := strings.Cut(f.spec, "/")
		index, err1 := strconv.Atoi(i)
		count, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil {
			return usageError{fmt.Sprintf("--shard %q: want I/N, e.g. 0/4", f.spec)}
		}
		f.shard = probes.Shard{Index: index, Count: count}
	} else {
		env, set := os.LookupEnv("JOB_COMPLETION_INDEX")
		if !set {
			return usageError{"--shards N takes the shard's index from JOB_COMPLETION_INDEX (a Kubernetes Indexed Job sets it), which is not set: give --shard I/N"}
		}
		index, err := strconv.Atoi(env)
		if err != nil {
			return usageError{fmt.Sprintf("JOB_COMPLETION_INDEX=%q is not a shard index", env)}
		}
		f.shard = probes.Shard{Index: index, Count: f.count}
	}
	s := f.shard
	switch {
	case s.Count < 1 || s.Count > probes.MaxShards:
		return usageError{fmt.Sprintf("shard %v: want 1 to %d shards", s, probes.MaxShards)}
	case s.Index < 0 || s.Index >= s.Count:
		return usageError{fmt.Sprintf("shard %v: the index must be 0 to %d", s, s.Count-1)}
	case l.autoConcurrency:
		return usageError{"--concurrency auto chooses one machine's clients: with --shard give the fleet's total"}
	case l.concurrency < s.Count:
		return usageError{fmt.Sprintf("--concurrency %d is fewer clients than %d shards", l.concurrency, s.Count)}
	case l.rate > 0 && s.Rate(l.rate) < minRate:
		return usageError{fmt.Sprintf("--rate %g over %d shards is below %g requests per second a shard", l.rate, s.Count, minRate)}
	}
	f.on = true
	return nil
}

// checkShard refuses what one shard cannot do for the fleet.
func (c *loadCommand) checkShard() error {
	switch {
	case c.load.shard.spec == "" && c.load.shard.count == 0:
		return nil
	case c.target.target == "" && c.target.file == "":
		return usageError{"--shard: give --target: every shard must load the same server, not a fixture of its own"}
	case c.writes.rate > 0:
		return usageError{"--during-writes checks one machine's reads against its own writes: it does not shard"}
	}
	return nil
}

// shardOptions are o as this shard runs it: its part of the clients and
// the rate; only shard 0 profiles the target (N generators fetching
// profiles would overlap and load it).
func (c *loadCommand) shardOptions(stderr io.Writer, o probes.LoadOptions) probes.LoadOptions {
	f := &c.load.shard
	if !f.on {
		return o
	}
	f.repeated = map[string][]string{"header": c.request.headers}
	total, totalRate := o.Concurrency, o.Rate
	o.Concurrency, f.first = f.shard.Clients(total)
	if o.Rate > 0 {
		o.Rate = f.shard.Rate(totalRate)
	}
	if f.runID == "" {
		f.runID = "cfg-" + strings.TrimPrefix(report.ConfigHash(f.config()), "sha256:")[:12]
	}
	part := fmt.Sprintf("%d of %d clients", o.Concurrency, total)
	if o.Rate > 0 {
		part += fmt.Sprintf(", %g of %g requests/s", o.Rate, totalRate)
	}
	fmt.Fprintf(stderr, "probe: shard %v of run %s: %s\n", f.shard, f.runID, part)
	if o.Profile != nil && f.shard.Index != 0 {
		fmt.Fprintf(stderr, "probe: shard %v: --profile is ignored: only shard 0 profiles the target\n", f.shard)
		o.Profile = nil
	}
	return o
}

// split is ml as this shard sends it.
func (f *shardFlags) split(ml probes.Microload) probes.Microload {
	if !f.on {
		return ml
	}
	return f.shard.Split(ml, f.first)
}

// attachShard makes rep this shard's report of run.
func (c *loadCommand) attachShard(rep *report.RunReport, run *probes.Run, o probes.LoadOptions) error {
	f := &c.load.shard
	if !f.on {
		return nil
	}
	return rep.AttachShard(run, report.Shard{Index: f.shard.Index, Count: f.shard.Count, RunID: f.runID, Config: f.config(),
		Clients: o.Concurrency, Rate: o.Rate, Profiled: run.Profiles != nil})
}

// config is what every shard of the run must share: the command and every
// flag that shapes the load, as given or defaulted (secrets hashed), and
// the target file's bytes.
func (f *shardFlags) config() map[string]string {
	cfg := map[string]string{"command": strings.TrimPrefix(f.fs.Name(), "probe "), "shards": strconv.Itoa(f.shard.Count)}
	f.fs.VisitAll(func(fl *flag.Flag) {
		if notLoadConfig[fl.Name] {
			return
		}
		v := fl.Value.String()
		if secretConfig[fl.Name] && v != "" {
			v = hashOf([]byte(v))
		}
		cfg[fl.Name] = v
	})
	for name, values := range f.repeated {
		if len(values) > 0 {
			cfg[name] = strings.Join(values, "\n")
			if secretConfig[name] {
				cfg[name] = hashOf([]byte(cfg[name]))
			}
		}
	}
	if file := cfg["file"]; file != "" {
		if b, err := os.ReadFile(file); err == nil {
			cfg["file_sha256"] = hashOf(b)
		}
	}
	return cfg
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
