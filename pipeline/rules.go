package pipeline

import "github.com/probehq/probe/analyzers"

// LoadRules is the analyzers' catalog with the rules of the file name
// added (src: its JSON, a Jsonnet file's output); a rule with a catalog
// id replaces it. No name: the catalog alone. An error names the file.
func LoadRules(name string, src []byte) ([]Rule, error) {
	if name == "" {
		return analyzers.DefaultRules(), nil
	}
	return analyzers.AddRules(name, src)
}
