package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The Kubernetes example (deploy/kubernetes) is checked as Kubernetes and
// probe would read it: its kinds, the Indexed Job's shape, and each probe
// command parsed by the command table's own flags.

type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		CompletionMode string  `yaml:"completionMode"`
		Completions    *int    `yaml:"completions"`
		Parallelism    *int    `yaml:"parallelism"`
		Template       podSpec `yaml:"template"`
	} `yaml:"spec"`
}

type podSpec struct {
	Spec struct {
		InitContainers []container `yaml:"initContainers"`
		Containers     []container `yaml:"containers"`
		Volumes        []struct {
			PersistentVolumeClaim *struct {
				ClaimName string `yaml:"claimName"`
			} `yaml:"persistentVolumeClaim"`
		} `yaml:"volumes"`
	} `yaml:"spec"`
}

type container struct {
	Name    string   `yaml:"name"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
}

func readManifests(t *testing.T) map[string]k8sObject {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "..", "deploy", "kubernetes", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no deploy/kubernetes/*.yaml")
	}
	objects := map[string]k8sObject{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(false)
		for {
			var o k8sObject
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
				t.Errorf("%s: an object without apiVersion, kind or name: %+v", f, o)
			}
			objects[o.Kind+"/"+o.Metadata.Name] = o
		}
	}
	return objects
}

// k8sVar is $(NAME), which Kubernetes fills from the container's env.
var k8sVar = regexp.MustCompile(`\$\(([A-Z_]+)\)`)

// parseProbe parses a container's probe command line with its command's
// flags, $(VARS) filled as Kubernetes would: the flag set and the words.
func parseProbe(t *testing.T, c container, env map[string]string) (*flag.FlagSet, []string) {
	t.Helper()
	args := slices.Clone(c.Args)
	for i, a := range args {
		args[i] = k8sVar.ReplaceAllStringFunc(a, func(v string) string { return env[v[2:len(v)-1]] })
	}
	cmd, rest := lookup(args)
	if cmd == nil {
		t.Fatalf("container %s: %v is not a probe command", c.Name, args)
	}
	fs := flag.NewFlagSet("probe "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cmd.setup(fs)
	words, err := parseArgs(fs, rest)
	if err != nil {
		t.Fatalf("container %s: probe %s: %v", c.Name, cmd.name, err)
	}
	return fs, words
}

func TestKubernetesExample(t *testing.T) {
	objects := readManifests(t)
	for _, want := range []string{"ConfigMap/probe-run", "PersistentVolumeClaim/probe-results", "Job/probe-shards", "Job/probe-merge",
		"Deployment/notes", "Service/notes"} {
		if _, ok := objects[want]; !ok {
			t.Errorf("deploy/kubernetes has no %s", want)
		}
	}
	job, merge := objects["Job/probe-shards"], objects["Job/probe-merge"]
	if job.Spec.CompletionMode != "Indexed" || job.Spec.Completions == nil || job.Spec.Parallelism == nil ||
		*job.Spec.Completions != *job.Spec.Parallelism || *job.Spec.Completions < 2 {
		t.Fatalf("probe-shards: completionMode %q, completions %v, parallelism %v: want Indexed and parallelism = completions = N",
			job.Spec.CompletionMode, job.Spec.Completions, job.Spec.Parallelism)
	}
	n := *job.Spec.Completions
	env := map[string]string{"PROBE_RUN_ID": "run-1", "JOB_COMPLETION_INDEX": "0"}

	shard := job.Spec.Template.Spec.Containers[0]
	if fmt.Sprint(shard.Command) != "[probe]" {
		t.Fatalf("the shard container runs %v, not probe", shard.Command)
	}
	fs, words := parseProbe(t, shard, env)
	if len(words) != 0 {
		t.Errorf("the shard's command has stray words %v", words)
	}
	if got := fs.Lookup("shards").Value.String(); got != strconv.Itoa(n) {
		t.Errorf("the shards run --shards %s, the Job %d completions", got, n)
	}
	if _, err := parseTarget(fs.Lookup("target").Value.String()); err != nil {
		t.Error(err)
	}
	out := fs.Lookup("out").Value.String()

	mc := merge.Spec.Template.Spec.Containers[0]
	_, dirs := parseProbe(t, mc, env)
	var want []string
	for i := range n {
		env["JOB_COMPLETION_INDEX"] = strconv.Itoa(i)
		want = append(want, k8sVar.ReplaceAllStringFunc(shard.Args[slices.Index(shard.Args, "--out")+1],
			func(v string) string { return env[v[2:len(v)-1]] }))
	}
	if !strings.HasPrefix(out, "/results/") || fmt.Sprint(dirs) != fmt.Sprint(want) {
		t.Errorf("the merge reads %v; the shards write %v", dirs, want)
	}
	for i, a := range mc.Args {
		if a == "--fail-on" {
			if _, err := parseThresholds(mc.Args[i+1:i+2], "run"); err != nil {
				t.Errorf("the merge's %v", err)
			}
		}
	}
	wait := strings.Join(merge.Spec.Template.Spec.InitContainers[0].Args, " ")
	if !strings.Contains(wait, "for i in "+strings.Trim(fmt.Sprint(indexes(n)), "[]")+";") {
		t.Errorf("the merge waits for other shards than 0…%d: %s", n-1, wait)
	}
	for name, o := range map[string]k8sObject{"probe-shards": job, "probe-merge": merge} {
		vs := o.Spec.Template.Spec.Volumes
		if len(vs) != 1 || vs[0].PersistentVolumeClaim == nil || vs[0].PersistentVolumeClaim.ClaimName != "probe-results" {
			t.Errorf("%s does not mount the shared claim probe-results", name)
		}
	}
	// The stand-in target is probe's own fixture: its command parses too.
	parseProbe(t, objects["Deployment/notes"].Spec.Template.Spec.Containers[0], env)
}

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
