//go:build race

package pipeline

// raceDetector: the race detector slows the in-process server's work
// five to ten times, and the experiment's seconds get too few samples of
// it to compare.
const raceDetector = true
