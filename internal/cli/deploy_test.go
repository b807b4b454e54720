package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/probehq/probe/fixtures"
	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/internal/lockedbuf"
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
		CompletionMode        string  `yaml:"completionMode"`
		Completions           *int    `yaml:"completions"`
		Parallelism           *int    `yaml:"parallelism"`
		ActiveDeadlineSeconds *int    `yaml:"activeDeadlineSeconds"`
		Template              podSpec `yaml:"template"`
	} `yaml:"spec"`
}

type podSpec struct {
	Spec struct {
		AutomountServiceAccountToken *bool `yaml:"automountServiceAccountToken"`
		HostNetwork                  bool  `yaml:"hostNetwork"`
		HostPID                      bool  `yaml:"hostPID"`
		SecurityContext              *struct {
			RunAsNonRoot   *bool       `yaml:"runAsNonRoot"`
			RunAsUser      *int        `yaml:"runAsUser"`
			SeccompProfile *seccompRef `yaml:"seccompProfile"`
		} `yaml:"securityContext"`
		InitContainers []container `yaml:"initContainers"`
		Containers     []container `yaml:"containers"`
		Volumes        []struct {
			Name                  string `yaml:"name"`
			PersistentVolumeClaim *struct {
				ClaimName string `yaml:"claimName"`
			} `yaml:"persistentVolumeClaim"`
			EmptyDir *struct{}      `yaml:"emptyDir"`
			HostPath map[string]any `yaml:"hostPath"`
		} `yaml:"volumes"`
	} `yaml:"spec"`
}

type seccompRef struct {
	Type string `yaml:"type"`
}

type container struct {
	Name    string   `yaml:"name"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	ReadinessProbe *struct {
		HTTPGet *struct {
			Path string `yaml:"path"`
			Port int    `yaml:"port"`
		} `yaml:"httpGet"`
	} `yaml:"readinessProbe"`
	SecurityContext *struct {
		RunAsNonRoot             *bool       `yaml:"runAsNonRoot"`
		RunAsUser                *int        `yaml:"runAsUser"`
		Privileged               bool        `yaml:"privileged"`
		AllowPrivilegeEscalation *bool       `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool       `yaml:"readOnlyRootFilesystem"`
		SeccompProfile           *seccompRef `yaml:"seccompProfile"`
		Capabilities             *struct {
			Add  []string `yaml:"add"`
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []volumeMount `yaml:"volumeMounts"`
}

type volumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
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
	if _, err := shared.ParseTarget(fs.Lookup("target").Value.String()); err != nil {
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
			if _, err := shared.ParseThresholds(mc.Args[i+1:i+2], "run"); err != nil {
				t.Errorf("the merge's %v", err)
			}
		}
	}
	wait := strings.Join(merge.Spec.Template.Spec.InitContainers[0].Args, " ")
	if !strings.Contains(wait, "for i in "+strings.Trim(fmt.Sprint(indexes(n)), "[]")+";") {
		t.Errorf("the merge waits for other shards than 0…%d: %s", n-1, wait)
	}
	for name, o := range map[string]k8sObject{"probe-shards": job, "probe-merge": merge} {
		var claims []string
		for _, v := range o.Spec.Template.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				claims = append(claims, v.PersistentVolumeClaim.ClaimName)
			}
		}
		if fmt.Sprint(claims) != "[probe-results]" {
			t.Errorf("%s mounts the claims %v, not the shared claim probe-results alone", name, claims)
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

// workloads are the kinds that run pods: each must have its pod checked.
var workloads = []string{"Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"}

// Every pod of the example runs as a user that is not root, under the
// runtime's seccomp profile, without the service account's token (the merge
// copies files: never the token), and every container on a read-only root
// filesystem, without privilege escalation or capabilities; what a probe
// container writes outside the reports' volume goes to an emptyDir at /tmp.
// The image is distroless's nonroot, its user by number.
func TestKubernetesHardened(t *testing.T) {
	pods := 0
	for id, o := range readManifests(t) {
		ps := o.Spec.Template.Spec
		if len(ps.Containers) == 0 {
			if slices.Contains(workloads, o.Kind) {
				t.Errorf("%s: no pod template's containers found to check", id)
			}
			continue
		}
		pods++
		if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
			t.Errorf("%s: automountServiceAccountToken is not false", id)
		}
		if ps.HostNetwork || ps.HostPID {
			t.Errorf("%s: shares the node's network or processes", id)
		}
		sc := ps.SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 ||
			sc.SeccompProfile == nil || sc.SeccompProfile.Type != "RuntimeDefault" {
			t.Errorf("%s: the pod's securityContext %+v: want runAsNonRoot, a runAsUser not 0, "+
				"seccompProfile RuntimeDefault", id, sc)
		}
		emptyDirs := map[string]bool{}
		for _, v := range ps.Volumes {
			if v.HostPath != nil {
				t.Errorf("%s: the volume %s is a hostPath", id, v.Name)
			}
			emptyDirs[v.Name] = v.EmptyDir != nil
		}
		for _, c := range append(slices.Clone(ps.InitContainers), ps.Containers...) {
			sc := c.SecurityContext
			if sc == nil {
				t.Errorf("%s: container %s has no securityContext", id, c.Name)
				continue
			}
			isTrue := func(b *bool) bool { return b != nil && *b }
			if !isTrue(sc.RunAsNonRoot) || (sc.RunAsUser != nil && *sc.RunAsUser == 0) || sc.Privileged ||
				sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || !isTrue(sc.ReadOnlyRootFilesystem) ||
				sc.SeccompProfile == nil || sc.SeccompProfile.Type != "RuntimeDefault" ||
				sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
				t.Errorf("%s: container %s's securityContext %+v: want runAsNonRoot, allowPrivilegeEscalation false, "+
					"readOnlyRootFilesystem, capabilities drop ALL (none added), seccompProfile RuntimeDefault", id, c.Name, sc)
			}
			tmp := func(m volumeMount) bool { return m.MountPath == "/tmp" && emptyDirs[m.Name] }
			if len(c.Command) > 0 && c.Command[0] == "probe" && !slices.ContainsFunc(c.VolumeMounts, tmp) {
				t.Errorf("%s: container %s runs probe on a read-only root without an emptyDir at /tmp", id, c.Name)
			}
		}
	}
	if pods < 3 {
		t.Errorf("checked %d pods: want the target's, the shards' and the merge's", pods)
	}

	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "kubernetes", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var from, user string
	for _, line := range strings.Split(string(b), "\n") {
		switch f := strings.Fields(line); {
		case len(f) >= 2 && strings.EqualFold(f[0], "FROM"):
			from, user = f[1], ""
		case len(f) >= 2 && strings.EqualFold(f[0], "USER"):
			user = f[1]
		}
	}
	if !strings.Contains(from, "distroless/static") || !strings.HasSuffix(from, ":nonroot") {
		t.Errorf("the image is built FROM %s: want distroless/static's :nonroot", from)
	}
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("the image's USER is %q: want a user that is not root, by number (runAsNonRoot cannot check a name)", user)
	}
}

// The stand-in target runs as the manifest says, its key from the Secret
// docs/KUBERNETES.md has the user make: the manifest's command, with the
// Secret's env resolved to a test key, run as a process (this test binary
// is probe, as TestMain has it) on the manifest's address (0.0.0.0, on a
// free port: 8080 may be taken here). Without the key it stops at once
// (exit 2: the default key is public), as it did before the Secret; with
// it, it serves its pages and its admin endpoints to that key alone.
func TestKubernetesTargetServes(t *testing.T) {
	c := readManifests(t)["Deployment/notes"].Spec.Template.Spec.Containers[0]
	if fmt.Sprint(c.Command) != "[probe]" {
		t.Fatalf("the target container runs %v, not probe", c.Command)
	}
	key := fmt.Sprintf("k8s-test-key-%d", os.Getpid())
	var env []string
	var secret string
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			ref := e.ValueFrom.SecretKeyRef
			if e.Name == fixtures.KeyEnv {
				secret = "kubectl create secret generic " + ref.Name + " --from-literal=" + ref.Key + "="
			}
			env = append(env, e.Name+"="+key)
			continue
		}
		env = append(env, e.Name+"="+e.Value)
	}
	if secret == "" {
		t.Fatalf("the target's %s is not from a Secret (secretKeyRef): env %+v", fixtures.KeyEnv, c.Env)
	}
	docs, err := os.ReadFile(filepath.Join("..", "..", "docs", "KUBERNETES.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(docs), secret) {
		t.Errorf("docs/KUBERNETES.md does not say to make the Secret: %q", secret)
	}

	args := slices.Clone(c.Args)
	i := slices.Index(args, "--addr")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("the target's args %v have no --addr", args)
	}
	host, _, err := net.SplitHostPort(args[i+1])
	if err != nil || host != "0.0.0.0" {
		t.Fatalf("the target listens on %q: want 0.0.0.0 (the Service's traffic comes from other hosts)", args[i+1])
	}
	args[i+1] = net.JoinHostPort(host, "0")
	if testing.Short() {
		args = append(args, "--notes", "200", "--synthetic") // the same command, a smaller vault: loaded at once
	}
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, fixtures.KeyEnv+"=") && !strings.HasPrefix(kv, "TMPDIR=") {
			base = append(base, kv)
		}
	}
	base = append(base, "TMPDIR="+t.TempDir()) // the pod's emptyDir at /tmp
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	refused := exec.CommandContext(ctx, os.Args[0], args...)
	refused.Env = base
	out, err := refused.CombinedOutput()
	if code := refused.ProcessState.ExitCode(); code != exitUsage || !strings.Contains(string(out), "is public") {
		t.Errorf("without the Secret's key: exit %d (%v), output %q: want exit 2, the default key is public", code, err, out)
	}

	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(base, env...)
	var stderr lockedbuf.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	var url string
	for sc := bufio.NewScanner(stdout); url == "" && sc.Scan(); {
		url, _ = strings.CutPrefix(sc.Text(), "listening on ")
	}
	if url == "" {
		t.Fatalf("the target did not serve: %s", stderr.String())
	}
	_, port, err := net.SplitHostPort(strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatalf("listening on %q: %v", url, err)
	}
	get := func(path, bearer string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://127.0.0.1:"+port+path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	ready := "/"
	if rp := c.ReadinessProbe; rp != nil && rp.HTTPGet != nil {
		ready = rp.HTTPGet.Path
	}
	if code := get(ready, ""); code != http.StatusOK {
		t.Errorf("GET %s (the readiness probe's): %d", ready, code)
	}
	for _, tc := range []struct {
		bearer string
		want   int
	}{{key, http.StatusOK}, {"", http.StatusUnauthorized}, {fixtures.DefaultKey, http.StatusUnauthorized}} {
		if code := get("/admin/settings", tc.bearer); code != tc.want {
			t.Errorf("GET /admin/settings with the key %q: %d, want %d", tc.bearer, code, tc.want)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
}

// Both Jobs end by a deadline, and the merge's wait for the shards gives
// up at its own (after the shards' Job's, before the merge Job's): the
// shards that came are merged, the missing one named. The init container's
// script runs as it is (sh -c), its deadline set short by its env, on a
// folder standing in for the volume; then the merge container's probe
// command. Before, one shard that never wrote its report held the merge
// waiting for ever.
func TestKubernetesMergeGivesUp(t *testing.T) {
	objects := readManifests(t)
	job, merge := objects["Job/probe-shards"], objects["Job/probe-merge"]
	wc, mc := merge.Spec.Template.Spec.InitContainers[0], merge.Spec.Template.Spec.Containers[0]
	wait := -1
	for _, e := range wc.Env {
		if e.Name == "PROBE_WAIT_S" {
			wait, _ = strconv.Atoi(e.Value)
		}
	}
	sd, md := job.Spec.ActiveDeadlineSeconds, merge.Spec.ActiveDeadlineSeconds
	if sd == nil || md == nil || wait <= *sd || *md <= wait {
		t.Fatalf("activeDeadlineSeconds %v (shards), %v (merge), the wait's PROBE_WAIT_S %d: "+
			"want the wait past the shards' deadline and within the merge's", sd, md, wait)
	}
	if len(wc.VolumeMounts) != 1 || len(wc.Args) != 1 {
		t.Fatalf("the wait's volumes %+v, args %q: want one volume and one script", wc.VolumeMounts, wc.Args)
	}
	mount := wc.VolumeMounts[0].MountPath // /results, here a folder of the test's
	root := t.TempDir()
	local := func(s string) string { return strings.ReplaceAll(s, mount+"/", root+"/") }
	n := *job.Spec.Completions
	const runID = "run-1"

	// Shards 0, 1 and 3 write their reports, shard 2 never does: each
	// shard's command as the Job runs it, its target a loopback server,
	// its load a second of a lighter rate.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer srv.Close()
	t.Setenv("PROBE_RUN_ID", runID)
	sc := job.Spec.Template.Spec.Containers[0]
	for i := range n {
		if i == 2 {
			continue
		}
		t.Setenv("JOB_COMPLETION_INDEX", strconv.Itoa(i))
		args := slices.Clone(sc.Args)
		for flag, v := range map[string]string{"--target": srv.URL, "--duration": "1s", "--warmup": "0", "--rate": "200",
			"--concurrency": "8"} {
			j := slices.Index(args, flag)
			if j < 0 || j+1 >= len(args) {
				t.Fatalf("the shard's args %v have no %s", sc.Args, flag)
			}
			args[j+1] = v
		}
		for j, a := range args {
			args[j] = local(k8sVar.ReplaceAllStringFunc(a, func(v string) string { return os.Getenv(v[2 : len(v)-1]) }))
		}
		if code, _, stderr := probeCmd.Run(t, context.Background(), args...); code != 0 {
			t.Fatalf("shard %d: exit %d: %s", i, code, stderr)
		}
	}

	// runWait runs the wait's script, then started() (the script running).
	runWait := func(waitS string, started func()) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", "-c", local(wc.Args[0]))
		cmd.Env = append(os.Environ(), "PROBE_RUN_ID="+runID, "PROBE_WAIT_S="+waitS, "PROBE_WAIT_POLL_S=1")
		var b lockedbuf.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		err := cmd.Start()
		if err == nil {
			started()
			err = cmd.Wait()
		}
		out := b.String()
		if ctx.Err() != nil {
			t.Fatalf("the wait with PROBE_WAIT_S=%s did not give up in 2 minutes: %q", waitS, out)
		}
		if err != nil {
			t.Fatalf("the wait: %v: %q", err, out)
		}
		return string(out)
	}
	out := runWait("1", func() {})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], fmt.Sprintf("shard 2/%d", n)) {
		t.Errorf("the wait that gave up says %q: want one line naming shard 2/%d", out, n)
	}

	margs := slices.Clone(mc.Args)
	for j, a := range margs {
		margs[j] = local(k8sVar.ReplaceAllStringFunc(a, func(v string) string { return os.Getenv(v[2 : len(v)-1]) }))
	}
	// Its exit status is the merged figures' (1: a --fail-on broken, as a
	// loaded test machine may make the p99), never a refusal (2).
	code, _, stderr := probeCmd.Run(t, context.Background(), margs...)
	if (code != 0 && (code != exitError || !strings.Contains(stderr, "threshold"))) ||
		!strings.Contains(stderr, fmt.Sprintf("shard 2/%d is missing", n)) {
		t.Fatalf("the merge of what came: exit %d, stderr %q: want it merged and shard 2 named missing", code, stderr)
	}
	r := readShardReport(t, filepath.Join(root, runID, "merged"))
	if r.Merge == nil || fmt.Sprint(r.Merge.Missing) != "[2]" || len(r.Merge.Shards) != n-1 || r.Latency.Requests == 0 {
		t.Errorf("the merged report: merge %+v, %d requests: want shards 0, 1, 3 merged, 2 missing",
			r.Merge, r.Latency.Requests)
	}

	// Without --allow-missing the same folders are refused in one line (and
	// with it, folders of which none holds a report).
	strict := slices.DeleteFunc(slices.Clone(margs), func(a string) bool { return a == "--allow-missing" })
	strict[slices.Index(strict, "--out")+1] = filepath.Join(root, "strict")
	probeCmd.BadInput(t, strict, exitUsage, "no report.json")
	probeCmd.BadInput(t, []string{"merge", "--allow-missing", filepath.Join(root, "none", "0"), filepath.Join(root, "none", "1")},
		exitUsage, "none of the folders holds a report.json")

	// A shard that comes while the wait runs, before its deadline, is
	// waited for: the wait ends when it comes, and gives up on none.
	late := func() {
		if err := os.MkdirAll(filepath.Join(root, runID, "2"), 0o755); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(filepath.Join(root, runID, "2", "report.json"), []byte("{}"), 0o644); err != nil {
			t.Error(err)
		}
	}
	if out := runWait("600", late); out != "" {
		t.Errorf("the wait for a shard that came says %q", out)
	}
}
