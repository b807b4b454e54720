package shared

import (
	"flag"
	"fmt"

	"github.com/probehq/probe/plan"
	"github.com/probehq/probe/probes"
)

// microloadFlags point a named microload at the target's own endpoints
// when discovery cannot, or should not, find them: the flags fill a
// plan.Microload, as a target file's entry does.
type MicroloadFlags struct{ plan.Microload }

// register adds the flags the named microload takes (its options in
// plan's table).
func (f *MicroloadFlags) Register(fs *flag.FlagSet, name string) {
	k, _ := plan.Lookup(name)
	for _, o := range k.Options {
		str, list := f.Field(o.Key)
		if o.Repeat {
			fs.Func(o.Flag, o.Usage, func(s string) error { *list = append(*list, s); return nil })
		} else {
			fs.StringVar(str, o.Flag, o.Default, o.Usage)
		}
	}
}

// flagHints say how to point each microload at its endpoint (plan's
// table); a command name without one is no named microload.
var FlagHints = func() map[string]string {
	out := map[string]string{}
	for _, k := range plan.Kinds {
		out[k.Name] = k.Hint
	}
	return out
}()

// needsFlag names the flag that points a microload that found nothing.
func NeedsFlag(name string, err error) error {
	if h, ok := FlagHints[name]; ok && probes.IsNotFound(err) {
		return fmt.Errorf("%v; point it there with %s", err, h)
	}
	return err
}

// build is the named microload of these flags; fixture gives the defaults
// of the reference target (its query endpoint and note queries).
func (f *MicroloadFlags) Build(name string, fixture bool) (probes.Microload, error) {
	m := f.Microload
	m.Name, m.Use = "", name
	return BuildMicroload(&m, fixture)
}

// buildMicroload is plan's Build, whose errors are a bad command line or
// target file.
func BuildMicroload(m *plan.Microload, fixture bool) (probes.Microload, error) {
	ml, err := m.Build(fixtureBuild(fixture))
	if err != nil {
		return nil, UsageError{err.Error()}
	}
	return ml, nil
}

// namedMicroload is a fresh microload of that name with its defaults.
func NamedMicroload(name string, fixture bool) (probes.Microload, error) {
	ml, err := plan.Named(name, fixtureBuild(fixture))
	if err != nil {
		return nil, UsageError{err.Error()}
	}
	return ml, nil
}
