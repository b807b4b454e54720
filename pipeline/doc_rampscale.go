// Package pipeline is what probe's commands run between their flags and
// their report: load, analyse, and the report's data. A ramp
// (Ramp: the arrival engine, the knee, what gave way) and a growth
// (Scale: the target at each size of its data, the fits) are here; the
// command line only parses flags, calls them and writes.
package pipeline
