package verdict

import (
	"sort"
	"strings"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/result"
)

// maxOtherKeys bounds the other keys of the endpoint tried.
const maxOtherKeys = 2

// Eligible: a finding the analysis could not settle from the
// replies, with a frame to measure. Decoding the request's own input is
// per-request by nature; no experiment can move it; nor work done per
// message a stream sends (per-message-work), which is no cache's.
func Eligible(f analyzers.Finding) bool {
	if f.Class != "info" && f.Class != "cacheable" || len(f.Frames) == 0 || f.WaitShare > 0 || f.Rule == "per-message-work" {
		return false
	}
	return !strings.Contains(f.Evidence, "arrives with each request")
}

// OverVaryingReplies: the finding's work makes the whole reply or a part
// that varies (its rule's scope: compressing, encoding, a token), and the
// same request's replies differed byte for byte in the run (a nonce, a
// timestamp). The replies have settled it: such work runs over bytes that
// change with every request, so neither a steady cost (load-time) nor one
// that moves with the key (memoise per input) would be true of it. On
// Caddy, gzip of a page stamped with the time per request cost the same
// for every page, and a steady cost would have called it load-time.
func OverVaryingReplies(rule *analyzers.Rule, run *result.Run) bool {
	if rule == nil || !rule.OverReplyBytes() {
		return false
	}
	for _, d := range MeasuredDigests(run) {
		if d.Distinct > 1 {
			return true
		}
	}
	return false
}

// MeasuredDigests are the run's reply keys of operations that are not
// set-up, with a request.
func MeasuredDigests(run *result.Run) []result.Digest {
	setup := map[string]bool{}
	for _, op := range run.Ops {
		setup[op.Name] = op.Setup
	}
	var ds []result.Digest
	for _, d := range run.Digests {
		if !setup[d.Op] && d.Requests > 0 {
			ds = append(ds, d)
		}
	}
	return ds
}

// Keys are the run's busiest measured key and up to
// maxOtherKeys other keys of the same operation, busiest first.
func Keys(run *result.Run) (base *result.Digest, others []result.Digest) {
	ds := MeasuredDigests(run)
	if len(ds) == 0 {
		return nil, nil
	}
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].Requests > ds[j].Requests })
	for _, d := range ds[1:] {
		if d.Op == ds[0].Op && len(others) < maxOtherKeys {
			others = append(others, d)
		}
	}
	return &ds[0], others
}
