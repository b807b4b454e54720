package result

// Runtime is the target's Go runtime as its binary and its environment
// say it (or, failing those, what its HTTP endpoints say), so that two
// reports of different Go releases or settings are not compared blind.
type Runtime struct {
	GoVersion    string `json:"go_version"`             // the toolchain that built it (go1.27.3)
	GOEXPERIMENT string `json:"goexperiment,omitempty"` // the build's experiments
	Module       string `json:"module,omitempty"`       // its main module
	// GOMAXPROCS as set in its environment, else the runtime's default
	// ("default"): the CPUs it may run on, CPUs.
	GOMAXPROCS string `json:"gomaxprocs"`
	CPUs       int    `json:"cpus,omitempty"` // in its affinity mask
	GOGC       string `json:"gogc"`           // its environment's GOGC, else "default" (100)
	GOMEMLIMIT string `json:"gomemlimit"`     // its environment's GOMEMLIMIT, else "default" (none)
	GODEBUG    string `json:"godebug,omitempty"`
	// From says where the figures came from: "binary" (its executable's
	// build information and its environment, a process on this machine);
	// when probe cannot read its process, "expvar" (the build information
	// the target publishes at /debug/vars: the Go version, GOEXPERIMENT
	// and the module) or "profile paths" (the toolchain's version in the
	// file names of a profile it serves: the Go version only); empty when
	// nothing said. Figures no source gave are empty.
	From string `json:"from"`
	// Unknown, when figures are empty: which, why, and what would settle
	// them.
	Unknown string `json:"unknown,omitempty"`
}
