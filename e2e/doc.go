// Package e2e holds probe's end-to-end tests: each drives the whole
// command (cli.Run, or the built binary) against a real server it starts —
// the fixture in both modes (fuzzed too), a hostile server
// (testdata/hostile), the zoo of labelled waste and clean endpoints
// (testdata/zoo, a module of its own), Caddy built from the module proxy,
// a server of known capacity, servers of other shapes, and git
// repositories built before and after — and checks
// report.json, the exit code and what the user reads.
//
// They take minutes (the whole folder ten or more on two cores), so they
// are not part of the everyday suite:
//
//	go test -short ./...          # everyday: every package's logic; skips this folder
//	go test -timeout 30m ./...    # everything, as CI runs it (.ci/run)
//	go test ./e2e -run TestCaddy  # one of them
//
// Under -short the whole package skips (TestMain says so). The test
// binary stands in for the probe binary: probe starts the fixture, and
// Jsonnet evaluation, by re-running its own executable with a command
// line, and TestMain hands such a command line to cli.Run.
package e2e
