package probes

import "github.com/HdrHistogram/hdrhistogram-go"

// histBatch holds a histogram's records until it has a batch of them. A
// record is two cache misses at 32 clients (the histogram's fields, and
// its counts in a table of a few hundred KB, each client's own): 9 % of
// probe's user CPU under bench/loadgen.sh. A batch touches the fields
// once and each line of counts its values need once.
type histBatch struct {
	h *hdrhistogram.Histogram
	n int
	v [64]int64
}

func newHistBatch(h *hdrhistogram.Histogram) histBatch { return histBatch{h: h} }

// record adds v; the histogram has it after the next flush.
func (b *histBatch) record(v int64) {
	b.v[b.n] = v
	if b.n++; b.n == len(b.v) {
		b.flush()
	}
}

// flush records what the batch holds.
func (b *histBatch) flush() {
	for _, v := range b.v[:b.n] {
		b.h.RecordValue(v)
	}
	b.n = 0
}
