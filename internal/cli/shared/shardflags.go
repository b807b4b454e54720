package shared

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/result"
)

// shardFlags are --shard, --shards and --run-id (the load commands).
type shardFlags struct {
	Spec  string // --shard I/N
	Count int    // --shards N: the index is JOB_COMPLETION_INDEX's
	RunID string
	fs    *flag.FlagSet // the command's flags: the configuration every shard must share
	// repeated are the values of the repeatable flags (--header), which
	// the flag set does not show.
	Repeated map[string][]string

	On    bool
	Shard probes.Shard
	First int // the shard's first client among all
}

// notLoadConfig are the flags a shard may set as it likes: where its
// report goes, what fails it, how it profiles (only shard 0 does).
var notLoadConfig = map[string]bool{"out": true, "force": true, "json": true, "fail-on": true, "shard": true, "shards": true,
	"run-id": true, "profile": true, "pprof": true, "rules": true, "wall": true, "max-profile": true, "pin": true}

// secretConfig are flags whose values go into report.json only as a hash.
var secretConfig = map[string]bool{"key": true, "header": true}

func (f *shardFlags) register(fs *flag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.Spec, "shard", "", "`I/N`: this generator is shard I of N (0 ≤ I < N): its part of the clients, the rate "+
		"and the request keys; probe merge joins the shards' reports")
	fs.IntVar(&f.Count, "shards", 0, "`N` shards, this one's index from JOB_COMPLETION_INDEX (as a Kubernetes Indexed Job sets it)")
	fs.StringVar(&f.RunID, "run-id", os.Getenv("PROBE_RUN_ID"), "with --shard: the run's id, the same on every shard (default "+
		"$PROBE_RUN_ID, else made from the configuration)")
}

// validate reads the shard and checks that l's load can be split into N.
func (f *shardFlags) validate(l *LoadFlags) error {
	switch {
	case f.Spec == "" && f.Count == 0:
		return nil
	case f.Spec != "" && f.Count != 0:
		return UsageError{"give --shard I/N or --shards N, not both"}
	}
	if f.Spec != "" {
		i, n, ok := strings.Cut(f.Spec, "/")
		index, err1 := strconv.Atoi(i)
		count, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil {
			return UsageError{fmt.Sprintf("--shard %q: want I/N, e.g. 0/4", f.Spec)}
		}
		f.Shard = probes.Shard{Index: index, Count: count}
	} else {
		env, set := os.LookupEnv("JOB_COMPLETION_INDEX")
		if !set {
			return UsageError{"--shards N takes the shard's index from JOB_COMPLETION_INDEX (a Kubernetes Indexed Job sets it), " +
				"which is not set: give --shard I/N"}
		}
		index, err := strconv.Atoi(env)
		if err != nil {
			return UsageError{fmt.Sprintf("JOB_COMPLETION_INDEX=%q is not a shard index", env)}
		}
		f.Shard = probes.Shard{Index: index, Count: f.Count}
	}
	s := f.Shard
	switch {
	case s.Count < 1 || s.Count > result.MaxShards:
		return UsageError{fmt.Sprintf("shard %v: want 1 to %d shards", s, result.MaxShards)}
	case s.Index < 0 || s.Index >= s.Count:
		return UsageError{fmt.Sprintf("shard %v: the index must be 0 to %d", s, s.Count-1)}
	case l.AutoConcurrency:
		return UsageError{"--concurrency auto chooses one machine's clients: with --shard give the fleet's total"}
	case l.Concurrency < s.Count:
		return UsageError{fmt.Sprintf("--concurrency %d is fewer clients than %d shards", l.Concurrency, s.Count)}
	case l.rate > 0 && s.Rate(l.rate) < minRate:
		return UsageError{fmt.Sprintf("--rate %g over %d shards is below %g requests per second a shard", l.rate, s.Count, minRate)}
	}
	f.On = true
	return nil
}

// split is ml as this shard sends it.
func (f *shardFlags) Split(ml probes.Microload) probes.Microload {
	if !f.On {
		return ml
	}
	return f.Shard.Split(ml, f.First)
}

// config is what every shard of the run must share: the command and every
// flag that shapes the load, as given or defaulted (secrets hashed), and
// the target file's bytes.
func (f *shardFlags) Config() map[string]string {
	cfg := map[string]string{"command": strings.TrimPrefix(f.fs.Name(), "probe "), "shards": strconv.Itoa(f.Shard.Count)}
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
	for name, values := range f.Repeated {
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
