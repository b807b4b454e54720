package shared

import (
	"context"
	"io"
	"os"

	"github.com/probehq/probe/plan"
)

// jsonnetCommand is the hidden command word of the guarded Jsonnet child
// (plan.EvalJsonnetGuarded re-runs probe's own binary with it).
const JsonnetCommand = "__jsonnet"

// readJSONOrJsonnet is a file's JSON: a JSON file as it is, a Jsonnet file
// evaluated in a guarded child.
func readJSONOrJsonnet(ctx context.Context, path string) ([]byte, error) {
	if !plan.IsJsonnet(path) {
		return os.ReadFile(path)
	}
	return evalJsonnet(ctx, path)
}

// evalJsonnet evaluates a Jsonnet file in a guarded child of probe's own
// binary: plan's evaluator for target files, and --rules'.
func evalJsonnet(ctx context.Context, path string) ([]byte, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return plan.EvalJsonnetGuarded(ctx, path, exe, JsonnetCommand)
}

// runJsonnetChild is the child's side.
func RunJsonnetChild(args []string, stdout, stderr io.Writer) int {
	return plan.RunJsonnetChild(args, stdout, stderr)
}
