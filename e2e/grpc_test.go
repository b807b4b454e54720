package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/probehq/probe/report"
)

// profileGRPC is `probe grpc --profile` with no --target: probe starts the
// fixture in mode and loads its notes search over gRPC.
func profileGRPC(t *testing.T, mode string) report.Run {
	t.Helper()
	out := t.TempDir()
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "grpc", "--profile", "--fixture-mode", mode, "--notes", "300",
		"--duration", "5s", "--warmup", "1s", "--concurrency", "8", "--json", "--out", out)
	if code != exitOK && code != exitError {
		t.Fatalf("%s: exit %d: %s", mode, code, stderr)
	}
	var rep report.Run
	decodeStdout(t, mode, stdout, &rep)
	if rep.Latency.Requests < 20 || rep.Latency.Errors != 0 || len(rep.Operations) != 1 ||
		rep.Operations[0].Op != "grpc probe.fixture.Notes/Search" || !strings.Contains(rep.Protocol, "h2c") {
		t.Fatalf("%s: %d requests, %d errors, operations %+v, protocol %q: want the fixture's search over h2c, clean",
			mode, rep.Latency.Requests, rep.Latency.Errors, rep.Operations, rep.Protocol)
	}
	// Each share is what pprof -focus shows of the same profile.
	checkSharesAgainstPprof(t, "grpc "+mode, filepath.Join(out, "cpu.pb.gz"), rep.Findings)
	return rep
}

// probe grpc --profile on the fixture finds the notes service's seeded hot
// spot (every note converted to its message, its words counted, on every
// call) in per-request mode, where it is, and claims nothing load-time in
// load-time mode, where the catalog is built once per load.
func TestGRPCProfileOfTheFixture(t *testing.T) {
	rep := profileGRPC(t, "per-request")
	found := false
	for _, f := range rep.Findings {
		if f.Rule == "per-request-full-scan" && strings.HasSuffix(f.OwnFrame, "fixtures/site.buildCatalog") {
			found = true
			if f.CPUShare < 0.2 || f.Class != "load-time" && f.Class != "cacheable" || f.Endpoint != "grpc probe.fixture.Notes/Search" {
				t.Errorf("per-request: %s at %s: %.0f%% of the CPU, class %s, endpoint %q; want a large load-time share of the search",
					f.Rule, f.OwnFrame, 100*f.CPUShare, f.Class, f.Endpoint)
			}
			if f.Suggestion == "" || !strings.Contains(f.Evidence, "buildCatalog") {
				t.Errorf("per-request: %s without its evidence or suggestion: %+v", f.Rule, f)
			}
		}
	}
	if !found {
		t.Errorf("per-request: no per-request-full-scan at buildCatalog among %s", rules(rep.Findings))
	}
	rep = profileGRPC(t, "load-time")
	for _, f := range rep.Findings {
		if f.Class == "load-time" {
			t.Errorf("load-time: a load-time finding: %s %.0f%% (%s)", f.Rule, 100*f.CPUShare, f.Evidence)
		}
	}
}
