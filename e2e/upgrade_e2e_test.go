//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// previousImageName is the previous release's image as the upgrade tests
// import it beside the one `make image` builds.
const previousImageName = "localhost/probelet/probelet:previous"

// previousRelease is the release in hack/upgrade/PREVIOUS: its commit, its
// unpacked tree (deploy/ as it shipped) and its image.
type previousRelease struct {
	commit, src, image string
}

var previous struct {
	once sync.Once
	rel  previousRelease
	err  error
}

// previousBuild builds (or takes from the cache) the previous release with
// hack/upgrade/previous.sh.
func previousBuild(t *testing.T) previousRelease {
	t.Helper()
	previous.once.Do(func() {
		start := time.Now()
		cmd := exec.Command(filepath.Join(repoRoot(), "hack", "upgrade", "previous.sh"), "--name", previousImageName)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			previous.err = fmt.Errorf("hack/upgrade/previous.sh: %w\n%s", err, stderr.String())
			return
		}
		for line := range strings.Lines(string(out)) {
			k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
			switch k {
			case "commit":
				previous.rel.commit = v
			case "src":
				previous.rel.src = v
			case "image":
				previous.rel.image = v
			}
		}
		t.Logf("previous release %s ready in %v", previous.rel.commit, time.Since(start).Round(time.Second))
	})
	if previous.err != nil {
		t.Fatal(previous.err)
	}
	return previous.rel
}

// fleetPod is one of the upgrade tests' workload pods: its probes and what
// its readiness is expected to do.
type fleetPod struct {
	name   string
	probes probespec.ContainerProbes
	// expect: "ready" (Ready throughout), "failing" (never Ready),
	// "flapping" (readiness toggles every 8 s: its flips are its own) or
	// "liveness" (its liveness is made to fail once: killed exactly once).
	expect string
	script string
}

const (
	fleetNamespace  = "fleet"  // probelet's probes, readiness gate
	nativeNamespace = "native" // the same pods with the kubelet's own probes
	fleetSize       = 50
	// flapEvery is the flapping pod's half-cycle.
	flapEvery = 8
)

// upgradeFleet is 50 pods: 45 healthy (HTTP, TCP and, for three, exec
// readiness; TCP or HTTP liveness), 3 whose readiness always fails, one
// flapping, and one (with a startup probe too) whose liveness the test
// breaks once.
func upgradeFleet() []fleetPod {
	serve := `trap "exit 0" TERM; touch /var/www/alive; httpd -f -p 8080 -h /var/www & wait`
	var pods []fleetPod
	for i := range 45 {
		p := fleetPod{name: fmt.Sprintf("ok-%02d", i), expect: "ready", script: serve}
		switch {
		case i%15 == 14: // three: an exec probe costs the runtime a runc exec
			p.probes = probespec.ContainerProbes{Readiness: execProbe(3, 3, "cat", indexDoc), Liveness: tcpProbe(appPort, 2, 3)}
		case i%2 == 1:
			p.probes = probespec.ContainerProbes{Readiness: tcpProbe(appPort, 1, 3), Liveness: httpProbe("/", 2, 3)}
		default:
			p.probes = probespec.ContainerProbes{Readiness: httpProbe("/", 1, 3), Liveness: tcpProbe(appPort, 2, 3)}
		}
		pods = append(pods, p)
	}
	for i := range 3 {
		pods = append(pods, fleetPod{name: fmt.Sprintf("failing-%d", i), expect: "failing", script: serve,
			probes: probespec.ContainerProbes{Readiness: httpProbe("/missing", 1, 1)}})
	}
	pods = append(pods, fleetPod{name: "flapping", expect: "flapping",
		script: fmt.Sprintf(`trap "exit 0" TERM; (while :; do touch /var/www/flap; sleep %d; rm -f /var/www/flap; sleep %d; done) & httpd -f -p 8080 -h /var/www & wait`, flapEvery, flapEvery),
		probes: probespec.ContainerProbes{Readiness: httpProbe("/flap", 1, 1)}})
	pods = append(pods, fleetPod{name: "liveness", expect: "liveness", script: serve,
		probes: probespec.ContainerProbes{Startup: httpProbe("/", 1, 30), Readiness: httpProbe("/", 1, 3), Liveness: httpProbe("/alive", 1, 3)}})
	return pods
}

// addStaticFleetPod adds a static pod to k's manifests in the fleet's
// namespace, with a liveness probe in probelet's annotation, and returns
// it as its mirror pod is named.
func addStaticFleetPod(t *testing.T, k *cluster.Kubelet) fleetPod {
	t.Helper()
	fp := fleetPod{name: "static-" + k.NodeName(), expect: "static",
		probes: probespec.ContainerProbes{Liveness: httpProbe("/", 2, 3)}}
	probes, err := jsonString(probespec.PodProbes{"app": fp.probes})
	if err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Appendf(nil, `apiVersion: v1
kind: Pod
metadata:
  name: static
  namespace: %s
  annotations:
    %s: %q
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    command: [sh, -c, %q]
    ports: [{name: http, containerPort: %d}]
`, fleetNamespace, probespec.AnnotationProbes, probes, testbed.BusyboxImage, `trap "exit 0" TERM; httpd -f -p 8080 -h /var/www & wait`, appPort)
	if err := k.AddStaticPod("static", manifest); err != nil {
		t.Fatal(err)
	}
	return fp
}

// createFleet creates the pods in namespace: with probelet's annotation and
// readiness gate, or (native) with the same probes in the spec for the
// kubelet.
func createFleet(ctx context.Context, t *testing.T, c *cluster.Cluster, node, namespace string, native bool, fleet []fleetPod) {
	t.Helper()
	if _, err := c.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grace := int64(2)
	for _, fp := range fleet {
		ctr := corev1.Container{Name: "app", Image: testbed.BusyboxImage, ImagePullPolicy: corev1.PullNever,
			Command: shell(fp.script), Ports: httpPort}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fp.name, Namespace: namespace},
			Spec:       corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &grace},
		}
		if native {
			ctr.ReadinessProbe, ctr.LivenessProbe = fp.probes.Readiness, fp.probes.Liveness
		} else {
			probes, err := jsonString(probespec.PodProbes{"app": fp.probes})
			if err != nil {
				t.Fatal(err)
			}
			pod.Annotations = map[string]string{probespec.AnnotationProbes: probes}
			pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: probespec.ConditionReady}}
		}
		pod.Spec.Containers = []corev1.Container{ctr}
		if _, err := c.Client().CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// waitFleetSettled waits until every pod of namespace is Running and Ready
// as expected: the healthy and the liveness pod Ready, the failing ones
// not.
func waitFleetSettled(ctx context.Context, t *testing.T, c *cluster.Cluster, namespace string, fleet []fleetPod) {
	t.Helper()
	expect := map[string]string{}
	for _, fp := range fleet {
		expect[fp.name] = fp.expect
	}
	eventually(t, 4*time.Minute, "the pods of "+namespace+" running and Ready as expected", func() (bool, string) {
		list, err := c.Client().CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var wrong []string
		found := 0
		for _, p := range list.Items {
			ready := cluster.PodCondition(&p, corev1.PodReady) == corev1.ConditionTrue
			e, ours := expect[p.Name]
			if ours {
				found++
			}
			switch {
			case !ours: // a static pod's mirror
			case p.Status.Phase != corev1.PodRunning:
				wrong = append(wrong, p.Name+" "+string(p.Status.Phase))
			case (e == "ready" || e == "liveness") && !ready, e == "failing" && ready:
				wrong = append(wrong, fmt.Sprintf("%s ready=%v", p.Name, ready))
			}
		}
		if found != len(fleet) {
			wrong = append(wrong, fmt.Sprintf("%d of %d pods", found, len(fleet)))
		}
		return len(wrong) == 0, fmt.Sprintf("%d wrong: %q", len(wrong), wrong[:min(5, len(wrong))])
	})
}

// flip is one change of a pod's Ready or probelet.io/ready condition.
type flip struct {
	at                   time.Time
	namespace, pod, cond string
	from, to             string
}

// flipWatch records every change of the watched pods' Ready and
// probelet.io/ready conditions, from the state it first sees on.
type flipWatch struct {
	mu    sync.Mutex
	flips []flip
	stop  func()
}

func watchFlips(ctx context.Context, t *testing.T, c *cluster.Cluster, namespaces ...string) *flipWatch {
	t.Helper()
	fw := &flipWatch{}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, ns := range namespaces {
		list, err := c.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		last := map[string]string{}
		state := func(p *corev1.Pod) {
			for _, cond := range []corev1.PodConditionType{corev1.PodReady, probespec.ConditionReady} {
				key, now := p.Name+"/"+string(cond), string(cluster.PodCondition(p, cond))
				if before, seen := last[key]; seen && before != now {
					fw.mu.Lock()
					fw.flips = append(fw.flips, flip{at: time.Now(), namespace: ns, pod: p.Name, cond: string(cond), from: before, to: now})
					fw.mu.Unlock()
				}
				last[key] = now
			}
		}
		for i := range list.Items {
			state(&list.Items[i])
		}
		w, err := c.Client().CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				if p, ok := ev.Object.(*corev1.Pod); ok {
					state(p)
				}
			}
		})
	}
	fw.stop = func() { cancel(); wg.Wait() }
	return fw
}

// between is the flips in [from, to) of namespace, of pods whose
// expectation is not their own flips.
func (fw *flipWatch) between(from, to time.Time, namespace string, expect map[string]string) []flip {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	var out []flip
	for _, f := range fw.flips {
		if f.namespace != namespace || f.at.Before(from) || !f.at.Before(to) {
			continue
		}
		if e := expect[f.pod]; e == "flapping" || e == "liveness" || e == "static" {
			continue
		}
		out = append(out, f)
	}
	return out
}

// runPoller reads every probe run from probelet's socket (each probe's
// history holds its last 10 runs) about once a second: the runs of both
// versions, so the gap a restart or an upgrade leaves is measured from
// the runs themselves.
type runPoller struct {
	socket string
	mu     sync.Mutex
	runs   map[probeKey][]time.Time
	pod    map[string]string // pod name by container ID
	// versions is what the socket's Version answered, in order.
	versions []string
	stop     func()
}

// probeKey is one probe of one container.
type probeKey struct {
	ctr string
	typ apiv1.ProbeType
}

func pollRuns(t *testing.T, socket string) *runPoller {
	rp := &runPoller{socket: socket, runs: map[probeKey][]time.Time{}, pod: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			rp.poll(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	rp.stop = func() { cancel(); <-done }
	t.Cleanup(rp.stop)
	return rp
}

func (rp *runPoller) poll(ctx context.Context) {
	api, closeAPI, err := socketAPI(rp.socket)
	if err != nil {
		return
	}
	defer closeAPI()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := api.Version(ctx, &apiv1.VersionRequest{})
	if err != nil {
		return // a restart in progress
	}
	rp.mu.Lock()
	if n := len(rp.versions); n == 0 || rp.versions[n-1] != v.Version {
		rp.versions = append(rp.versions, v.Version)
	}
	rp.mu.Unlock()
	list, err := api.ListContainers(ctx, &apiv1.ListContainersRequest{})
	if err != nil {
		return
	}
	for _, c := range list.Containers {
		if c.PodNamespace != fleetNamespace {
			continue
		}
		got, err := api.GetContainer(ctx, &apiv1.GetContainerRequest{Container: c.ContainerId})
		if err != nil {
			continue
		}
		rp.mu.Lock()
		rp.pod[c.ContainerId] = c.PodName
		for _, pr := range got.Container.Probes {
			key := probeKey{c.ContainerId, pr.Type}
			for _, run := range pr.History {
				at := run.Time.AsTime()
				if !slices.ContainsFunc(rp.runs[key], at.Equal) {
					rp.runs[key] = append(rp.runs[key], at)
				}
			}
		}
		rp.mu.Unlock()
	}
}

// probeGap is the longest interval between two runs of one probe.
type probeGap struct {
	probe    string // pod/type
	gap      time.Duration
	from, to time.Time
}

// gaps is, for a step, the longest interval between two consecutive runs
// of each probe that ends in it ([from, to)), but a startup probe's (it
// stops once it succeeded, and runs again for a new instance), and the
// restart's own time: from the old instance's last run of any probe (the
// start of the longest silence ending in the step) to when the new one has
// run every probe.
func (rp *runPoller) gaps(from, to time.Time) (worst map[string]probeGap, restart time.Duration) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	in := func(t time.Time) bool { return !t.Before(from) && t.Before(to) }
	worst = map[string]probeGap{}
	var all []time.Time
	sorted := map[probeKey][]time.Time{}
	for key, runs := range rp.runs {
		if key.typ == apiv1.ProbeType_PROBE_TYPE_STARTUP {
			continue
		}
		runs = slices.Clone(runs)
		slices.SortFunc(runs, time.Time.Compare)
		sorted[key] = runs
		name := rp.pod[key.ctr] + "/" + strings.ToLower(strings.TrimPrefix(key.typ.String(), "PROBE_TYPE_"))
		for i := 1; i < len(runs); i++ {
			if g := runs[i].Sub(runs[i-1]); in(runs[i]) && g > worst[name].gap {
				worst[name] = probeGap{probe: name, gap: g, from: runs[i-1], to: runs[i]}
			}
		}
		all = append(all, runs...)
	}
	slices.SortFunc(all, time.Time.Compare)
	var silentFrom, silentTo time.Time
	for i := 1; i < len(all); i++ {
		if in(all[i]) && all[i].Sub(all[i-1]) > silentTo.Sub(silentFrom) {
			silentFrom, silentTo = all[i-1], all[i]
		}
	}
	for _, runs := range sorted {
		if i, _ := slices.BinarySearchFunc(runs, silentTo, time.Time.Compare); i < len(runs) {
			restart = max(restart, runs[i].Sub(silentFrom))
		}
	}
	return worst, restart
}

// lastRuns is the latest run of any probe of every fleet container the
// socket lists, by pod name.
func (rp *runPoller) lastRuns() map[string]time.Time {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	out := map[string]time.Time{}
	for key, runs := range rp.runs {
		pod := rp.pod[key.ctr]
		for _, r := range runs {
			if r.After(out[pod]) {
				out[pod] = r
			}
		}
	}
	return out
}

// socketAPI is a client of probelet's socket at target, and its close.
func socketAPI(target string) (apiv1.ProbeletClient, func() error, error) {
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	return apiv1.NewProbeletClient(conn), conn.Close, nil
}

// agentStep is what a step does to probelet itself.
type agentStep int

const (
	agentKept      agentStep = iota
	agentRestarted           // a new instance takes over
	agentRemoved             // gone for a while, then installed again
)

// upgradePhase is one upgrade, rollback or restart and what it showed.
type upgradePhase struct {
	name       string
	start, end time.Time
	// agent is what the step does to probelet itself.
	agent agentStep
	// runtimeDown is how long the step held the runtime down: an exec
	// probe's run waits for it in ExecSync (the kubelet's worker, in the
	// same call, waits as long).
	runtimeDown time.Duration
}

// restartCounts is each pod's container restarts in namespace.
func restartCounts(ctx context.Context, t *testing.T, c *cluster.Cluster, namespace string) map[string]int32 {
	t.Helper()
	list, err := c.Client().CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int32{}
	for _, p := range list.Items {
		for _, s := range p.Status.ContainerStatuses {
			out[p.Name] += s.RestartCount
		}
	}
	return out
}

// agentPod is the agent's pod and its container's ID.
func agentPod(ctx context.Context, c *cluster.Cluster) (*corev1.Pod, string, error) {
	list, err := c.Client().CoreV1().Pods(agentNamespace).List(ctx, metav1.ListOptions{LabelSelector: agentLabel})
	if err != nil {
		return nil, "", err
	}
	for i, p := range list.Items {
		if p.DeletionTimestamp == nil && len(p.Status.ContainerStatuses) > 0 {
			return &list.Items[i], containerID(p.Status.ContainerStatuses[0]), nil
		}
	}
	return nil, "", fmt.Errorf("no agent pod")
}

// waitAgentServing waits until an agent pod is Ready with its container
// started after since (since zero: any), and its socket answers with
// version.
func waitAgentServing(ctx context.Context, t *testing.T, c *cluster.Cluster, socket string, since time.Time, version string) {
	t.Helper()
	eventually(t, 3*time.Minute, "the agent Ready and serving version "+version, func() (bool, string) {
		p, _, err := agentPod(ctx, c)
		if err != nil {
			return false, err.Error()
		}
		st := p.Status.ContainerStatuses[0]
		if cluster.PodCondition(p, corev1.PodReady) != corev1.ConditionTrue || st.State.Running == nil {
			return false, p.Name + " not Ready"
		}
		if st.State.Running.StartedAt.Time.Before(since.Truncate(time.Second)) {
			return false, fmt.Sprintf("%s started %v, before the step", p.Name, st.State.Running.StartedAt)
		}
		api, closeAPI, err := socketAPI(socket)
		if err != nil {
			return false, err.Error()
		}
		defer closeAPI()
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		v, err := api.Version(cctx, &apiv1.VersionRequest{})
		if err != nil {
			return false, err.Error()
		}
		return v.Version == version && v.NriConnected, fmt.Sprintf("version %q, registered %v", v.Version, v.NriConnected)
	})
}

// socketEvents is every event the socket keeps (from its history file and
// since), and the restarts it shows for the fleet's pods by pod name.
func socketEvents(ctx context.Context, t *testing.T, socket string) ([]*apiv1.Event, map[string][]*apiv1.Restart) {
	t.Helper()
	api, closeAPI, err := socketAPI(socket)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAPI()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream, err := api.Events(ctx, &apiv1.EventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var events []*apiv1.Event
	for {
		ev, err := stream.Recv()
		if err != nil {
			break
		}
		events = append(events, ev)
	}
	list, err := api.ListContainers(ctx, &apiv1.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	restarts := map[string][]*apiv1.Restart{}
	for _, c := range list.Containers {
		if c.PodNamespace != fleetNamespace {
			continue
		}
		got, err := api.GetContainer(ctx, &apiv1.GetContainerRequest{Container: c.ContainerId})
		if err == nil {
			restarts[c.PodName] = append(restarts[c.PodName], got.Container.Restarts...)
		}
	}
	return events, restarts
}

// previousValues is the chart values of the current release (helmBedValues)
// for the previous release's chart: without the flags it did not have.
func previousValues(t *testing.T, current string) string {
	t.Helper()
	data, err := os.ReadFile(current)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for line := range strings.Lines(string(data)) {
		if !strings.Contains(line, "state-listen:") && !strings.Contains(line, "probe-api-listen:") && !strings.Contains(line, "Other tests' probelets share") {
			out.WriteString(line)
		}
	}
	file := filepath.Join(t.TempDir(), "previous-values.yaml")
	if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestClusterUpgradeRollbackAndRestarts installs the previous release
// (hack/upgrade/PREVIOUS: its chart, manifests and image) with Helm on the
// real control plane beside 50 pods gated on probelet.io/ready, and the
// same 50 pods with the kubelet's own probes, then, one step at a time:
// runs this tree's controller beside the previous agent for a grace
// period, upgrades to this tree's chart and image (while one pod's
// liveness is made to fail), rolls back, runs this tree's agent beside
// the previous controller for a grace period, upgrades again; restarts
// under it the agent, the controller's leader, the kubelet, the CRI proxy
// the kubelet goes through, containerd, and all of them as a node reboot
// orders them; then moves to kustomize (helm uninstall, the previous
// release's manifests applied over the running pods), upgrades to this
// tree's manifests and back. For every step: no healthy pod's Ready or
// probelet.io/ready goes False, no failing pod's goes True, no probe waits
// longer than the restart's own time and two and a half periods, no
// container is killed but the broken one, exactly once; the history
// written by one version is read by the other, both ways. The kubelet's
// native probes on the same pods are counted the same way, side by side.
func TestClusterUpgradeRollbackAndRestarts(t *testing.T) {
	t.Parallel()
	prev := previousBuild(t)
	helm, err := helmPath()
	if err != nil {
		t.Fatalf("hack/tools.sh helm: %v", err)
	}
	var proxy *daemon
	ctx, c, bed, k := agentNodeFor(t, 25*time.Minute, func(bed *testbed.Bed) []cluster.KubeletOption {
		proxy = startCRIProxy(t, bed)
		return []cluster.KubeletOption{cluster.WithCRIEndpoint(proxyEndpoint(bed)), cluster.WithImageEndpoint(proxyEndpoint(bed))}
	})
	if err := bed.ImportImage(prev.image); err != nil {
		t.Fatal(err)
	}
	metrics := freeLocalAddr(t)
	_, port, _ := net.SplitHostPort(metrics)
	values := helmBedValues(t, bed.Dir(), port, strings.TrimPrefix(c.URL(), "https://"), k.NodeIP())
	oldValues := previousValues(t, values)
	socket := "unix://" + filepath.Join(bed.Dir(), "probelet-run", "probelet.sock")
	helmRun := func(args ...string) {
		t.Helper()
		args = append(args, "--kubeconfig", c.Kubeconfig(), "--namespace", "default", "--timeout", "3m")
		out, err := exec.CommandContext(ctx, helm, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// The controller's grace period, short enough that a step holding it
	// shows whether the controller reads the other version's Lease (a
	// misread one would be silent, and its pods marked).
	const grace = 20 * time.Second
	graceFlag := fmt.Sprintf("controller.flags.grace-period=%v", grace)
	oldChart, newChart := filepath.Join(prev.src, "deploy", "helm", "probelet"), filepath.Join(repoRoot(), "deploy", "helm", "probelet")
	oldVersion, newVersion := prev.commit[:12], "e2e"

	// The previous chart rolls its controller with a surge pod, which in
	// the node's network finds its ports taken on this one node: as an
	// operator of such a cluster would, replace the replica instead (this
	// tree's chart does so itself with controller.hostNetwork).
	oneAtATime := func() {
		t.Helper()
		if out, err := c.Kubectl("-n", agentNamespace, "patch", "deployment/probelet-controller", "--type=merge",
			"-p", `{"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":0,"maxUnavailable":1}}}}`); err != nil {
			t.Fatalf("kubectl patch: %v: %s", err, out)
		}
	}
	controllerRolledOut := func() {
		t.Helper()
		if out, err := c.Kubectl("-n", agentNamespace, "rollout", "status", "deployment/probelet-controller", "--timeout=3m"); err != nil {
			t.Fatalf("the controller's rollout: %v: %s", err, out)
		}
	}
	helmRun("install", "probelet", oldChart, "--values", oldValues, "--set", "image.tag=previous", "--set", graceFlag)
	waitAgentServing(ctx, t, c, socket, time.Time{}, oldVersion)
	controllerRolledOut()

	fleet := upgradeFleet()
	expect := map[string]string{}
	for _, fp := range fleet {
		expect[fp.name] = fp.expect
	}
	createFleet(ctx, t, c, k.NodeName(), fleetNamespace, false, fleet)
	createFleet(ctx, t, c, k.NodeName(), nativeNamespace, true, fleet)
	// And one of the kubelet's static pods, probed by probelet (a liveness
	// probe: no gate, its Ready is the kubelet's): through the kubelet's
	// restarts it is neither killed nor left unprobed.
	static := addStaticFleetPod(t, k)
	expect[static.name] = static.expect
	probed := append(slices.Clone(fleet), static)
	waitFleetSettled(ctx, t, c, fleetNamespace, fleet)
	waitFleetSettled(ctx, t, c, nativeNamespace, fleet)
	runs := pollRuns(t, socket)
	eventually(t, 2*time.Minute, "the static pod probed", func() (bool, string) {
		return !runs.lastRuns()[static.name].IsZero(), "no run yet"
	})
	flips := watchFlips(ctx, t, c, fleetNamespace, nativeNamespace)
	defer flips.stop()

	// longestPeriod bounds how long every probe takes to run once.
	const longestPeriod = 3 * time.Second
	var phases []upgradePhase
	// hold is how long a step waits once every pod was probed again: two
	// of the longest periods for late flips, or (holdGrace) the grace
	// period and a monitor pass.
	hold, holdGrace := 2*longestPeriod, grace+5*time.Second
	step := func(name string, agent agentStep, version string, do func() (runtimeDown time.Duration)) {
		t.Helper()
		ph := upgradePhase{name: name, start: time.Now(), agent: agent}
		ph.runtimeDown = do()
		since := time.Time{}
		if agent != agentKept {
			since = ph.start
		}
		waitAgentServing(ctx, t, c, socket, since, version)
		// Settled: every fleet pod's probes ran after the step, then
		// two of the longest periods more for late flips.
		done := time.Now()
		eventually(t, time.Minute, name+": every fleet pod probed again", func() (bool, string) {
			var behind []string
			for _, fp := range probed {
				if runs.lastRuns()[fp.name].Before(done) {
					behind = append(behind, fp.name)
				}
			}
			return len(behind) == 0, fmt.Sprintf("not yet: %q", behind[:min(5, len(behind))])
		})
		time.Sleep(hold)
		hold = 2 * longestPeriod
		ph.end = time.Now()
		phases = append(phases, ph)
		t.Logf("%s: done in %v", name, ph.end.Sub(ph.start).Round(100*time.Millisecond))
	}

	// The broken liveness pod: its liveness fails from now on, until it
	// is killed (its new container serves /alive again).
	breakLiveness := func() {
		_, id, err := podContainer(ctx, c, fleetNamespace, "liveness")
		if err != nil {
			t.Fatal(err)
		}
		if out, code, err := bed.Exec(id, "rm", "/var/www/alive"); err != nil || code != 0 {
			t.Fatalf("breaking the liveness pod: %v, exit %d: %s", err, code, out)
		}
	}

	// Version skew: this tree's controller beside the previous release's
	// agents, as in a rollout that reaches the controller first.
	hold = holdGrace
	step("skew: this tree's controller, the previous agent", agentKept, oldVersion, func() time.Duration {
		oneAtATime()
		if out, err := c.Kubectl("-n", agentNamespace, "set", "image", "deployment/probelet-controller", "probelet-controller="+e2eImageName); err != nil {
			t.Fatalf("kubectl set image: %v: %s", err, out)
		}
		controllerRolledOut()
		return 0
	})
	step("helm upgrade (previous → this tree)", agentRestarted, newVersion, func() time.Duration {
		breakLiveness()
		helmRun("upgrade", "probelet", newChart, "--values", values, "--set", graceFlag)
		controllerRolledOut()
		return 0
	})
	eventually(t, time.Minute, "the broken liveness pod killed", func() (bool, string) {
		n := restartCounts(ctx, t, c, fleetNamespace)["liveness"]
		return n >= 1, fmt.Sprintf("%d restarts", n)
	})
	events, restarts := socketEvents(ctx, t, socket)
	checkHistoryCarried(t, "this tree", events, restarts, phases[1].start)

	step("helm rollback (this tree → previous)", agentRestarted, oldVersion, func() time.Duration {
		helmRun("rollback", "probelet", "1")
		oneAtATime()
		controllerRolledOut()
		return 0
	})
	events, restarts = socketEvents(ctx, t, socket)
	checkHistoryCarried(t, "the previous release", events, restarts, phases[2].start)

	// And the other way: this tree's agent beside the previous controller.
	hold = holdGrace
	step("skew: this tree's agent, the previous controller", agentRestarted, newVersion, func() time.Duration {
		if out, err := c.Kubectl("-n", agentNamespace, "set", "image", "daemonset/probelet", "probelet="+e2eImageName); err != nil {
			t.Fatalf("kubectl set image: %v: %s", err, out)
		}
		return 0
	})
	step("helm upgrade again", agentRestarted, newVersion, func() time.Duration {
		helmRun("upgrade", "probelet", newChart, "--values", values, "--set", graceFlag)
		controllerRolledOut()
		return 0
	})
	step("probelet restart (its pod deleted)", agentRestarted, newVersion, func() time.Duration {
		p, _, err := agentPod(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Client().CoreV1().Pods(agentNamespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		return 0
	})
	step("probelet-controller leader restart", agentKept, newVersion, func() time.Duration {
		list, err := c.Client().CoreV1().Pods(agentNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=probelet-controller"})
		if err != nil || len(list.Items) == 0 {
			t.Fatalf("the controller's pods: %v (%d)", err, len(list.Items))
		}
		for _, p := range list.Items {
			if err := c.Client().CoreV1().Pods(agentNamespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, 2*time.Minute, "a new controller available", func() (bool, string) {
			d, err := c.Client().AppsV1().Deployments(agentNamespace).Get(ctx, "probelet-controller", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return d.Status.AvailableReplicas == 1 && d.Status.UpdatedReplicas == 1 && d.Status.Replicas == 1,
				fmt.Sprintf("%d available of %d", d.Status.AvailableReplicas, d.Status.Replicas)
		})
		return 0
	})
	step("kubelet restart", agentKept, newVersion, func() time.Duration {
		if err := k.Restart(); err != nil {
			t.Fatal(err)
		}
		return 0
	})
	step("CRI proxy restart", agentKept, newVersion, func() time.Duration {
		proxy.stop()
		proxy.start()
		return 0
	})
	step("containerd restart", agentKept, newVersion, func() time.Duration {
		down := time.Now()
		if err := bed.RestartRuntime(); err != nil {
			t.Fatal(err)
		}
		return time.Since(down)
	})
	step("node reboot (all stopped; started in boot order)", agentRestarted, newVersion, func() time.Duration {
		_, id, err := agentPod(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		st, err := bed.ContainerState(id)
		if err != nil {
			t.Fatal(err)
		}
		// Shutdown order: the kubelet, then the agent, the proxy and the
		// runtime (units stopped in reverse of their start).
		if err := k.StopProcess(); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(st.Pid, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		proxy.stop()
		if err := bed.StopRuntime(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := bed.StartRuntime(); err != nil {
			t.Fatal(err)
		}
		proxy.start()
		if err := k.StartProcess(); err != nil {
			t.Fatal(err)
		}
		return 0
	})

	// The same through kustomize: the chart's release uninstalled (its
	// controller with it: the agents run alone from here on, as
	// deploy/overlays installs them), the previous release's manifests
	// applied over the running pods, then this tree's, then the previous
	// ones again.
	metricsPort, _ := strconv.Atoi(port)
	apiServer := strings.TrimPrefix(c.URL(), "https://")
	oldOverlay := bedOverlayOf(t, prev.src, "previous", bed.Dir(), metricsPort, apiServer)
	newOverlay := bedOverlayOf(t, repoRoot(), "", bed.Dir(), metricsPort, apiServer)
	apply := func(dir string) {
		t.Helper()
		if out, err := c.Kubectl("apply", "-k", dir); err != nil {
			t.Fatalf("kubectl apply -k: %v: %s", err, out)
		}
	}
	step("helm uninstall; kubectl apply -k (previous)", agentRemoved, oldVersion, func() time.Duration {
		helmRun("uninstall", "probelet", "--wait")
		eventually(t, 2*time.Minute, "namespace "+agentNamespace+" gone", func() (bool, string) {
			_, err := c.Client().CoreV1().Namespaces().Get(ctx, agentNamespace, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		apply(oldOverlay)
		return 0
	})
	step("kubectl apply -k (previous → this tree)", agentRestarted, newVersion, func() time.Duration {
		apply(newOverlay)
		return 0
	})
	step("kubectl apply -k (this tree → previous)", agentRestarted, oldVersion, func() time.Duration {
		apply(oldOverlay)
		return 0
	})

	// Kills: the broken pod exactly once, nothing else.
	for _, ns := range []string{fleetNamespace, nativeNamespace} {
		for pod, n := range restartCounts(ctx, t, c, ns) {
			want := int32(0)
			if ns == fleetNamespace && expect[pod] == "liveness" {
				want = 1
			}
			if n != want {
				t.Errorf("%s/%s restarted %d times, want %d", ns, pod, n, want)
			}
		}
	}

	flips.stop()
	runs.stop()
	t.Logf("the socket served versions, in order: %q", runs.versions)
	var table strings.Builder
	row := func(format string, args ...any) {
		fmt.Fprintf(&table, format+"\n", args...)
	}
	row("%-50s %9s %8s  %-32s %s", "step: flips of 50 gated pods | the same 50 pods", "probelet", "kubelet", "longest gap between two runs", "the restart's own time")
	defer func() {
		t.Logf("upgrades and restarts (flips counted by a watch):\n%s", table.String())
		if dir := os.Getenv("PROBELET_UPGRADE_OUT"); dir != "" {
			_ = os.WriteFile(filepath.Join(dir, "upgrade.txt"), []byte(table.String()), 0o644)
		}
	}()
	for _, ph := range phases {
		ours := flips.between(ph.start, ph.end, fleetNamespace, expect)
		theirs := flips.between(ph.start, ph.end, nativeNamespace, expect)
		worst, restart := runs.gaps(ph.start, ph.end)
		var longest probeGap
		for _, g := range worst {
			if g.gap > longest.gap {
				longest = g
			}
		}
		own := "-"
		switch {
		case ph.agent != agentKept:
			own = fmt.Sprintf("%v until every probe ran again", restart.Round(10*time.Millisecond))
		case ph.runtimeDown > 0:
			own = fmt.Sprintf("%v runtime down", ph.runtimeDown.Round(10*time.Millisecond))
		}
		row("%-50s %9d %8d  %-32s %s", ph.name, len(ours), len(theirs),
			fmt.Sprintf("%v (%s)", longest.gap.Round(10*time.Millisecond), longest.probe), own)
		for _, f := range ours {
			t.Errorf("%s: %s/%s %s %s → %s at %s", ph.name, f.namespace, f.pod, f.cond, f.from, f.to, f.at.Format(time.TimeOnly))
		}
		for _, f := range theirs {
			row("  the kubelet's: %s/%s %s %s → %s at %s", f.namespace, f.pod, f.cond, f.from, f.to, f.at.Format(time.TimeOnly))
		}
		// No tick is missed (half a period late at most) but for the
		// restart's own time: probelet's own (the old instance ran every
		// probe until it stopped), or the runtime's for an exec probe,
		// which waits for it in ExecSync. The restart itself ends within
		// the controller's grace period, or the safety net marks the
		// node's pods.
		if ph.agent == agentRestarted && restart >= grace {
			t.Errorf("%s: every probe ran again %v after the old probelet's last run, not within the grace period (%v)", ph.name, restart.Round(10*time.Millisecond), grace)
		}
		for name, g := range worst {
			period := fleetPeriod(probed, name)
			bound := period * 3 / 2
			switch {
			case ph.agent != agentKept:
				bound += restart
			case fleetExec(probed, name):
				bound += ph.runtimeDown
			}
			if g.gap > bound {
				t.Errorf("%s: %s ran %v apart (%s to %s), bound %v", ph.name, name, g.gap.Round(10*time.Millisecond),
					g.from.Format("15:04:05.000"), g.to.Format("15:04:05.000"), bound.Round(10*time.Millisecond))
			}
		}
	}
}

// fleetProbe is the probe named pod/type (runPoller.gaps).
func fleetProbe(fleet []fleetPod, name string) *corev1.Probe {
	pod, typ, _ := strings.Cut(name, "/")
	for _, fp := range fleet {
		if fp.name == pod {
			return map[string]*corev1.Probe{"readiness": fp.probes.Readiness, "liveness": fp.probes.Liveness, "startup": fp.probes.Startup}[typ]
		}
	}
	return nil
}

// fleetPeriod is the period of the probe named pod/type.
func fleetPeriod(fleet []fleetPod, name string) time.Duration {
	if p := fleetProbe(fleet, name); p != nil {
		return time.Duration(p.PeriodSeconds) * time.Second
	}
	return time.Second
}

// fleetExec: the probe named pod/type runs a command.
func fleetExec(fleet []fleetPod, name string) bool {
	p := fleetProbe(fleet, name)
	return p != nil && p.Exec != nil
}

// checkHistoryCarried: the version now serving shows the events and the
// restart it did not see itself, read from the state directory the other
// version wrote: events from before the step, and the broken pod's kill.
func checkHistoryCarried(t *testing.T, who string, events []*apiv1.Event, restarts map[string][]*apiv1.Restart, step time.Time) {
	t.Helper()
	older := 0
	for _, ev := range events {
		if ev.Time.AsTime().Before(step) {
			older++
		}
	}
	if older == 0 {
		t.Errorf("%s shows %d events, none from before it started: the other version's history was not read", who, len(events))
	}
	if n := len(restarts["liveness"]); n != 1 {
		t.Errorf("%s shows %d restarts issued for the broken liveness pod, want 1 (from the history file): %v", who, n, restarts["liveness"])
	}
	t.Logf("%s: %d events (%d from before it started), the broken pod's kill: %v", who, len(events), older, restarts["liveness"])
}

// podContainer is a pod's first container's ID.
func podContainer(ctx context.Context, c *cluster.Cluster, namespace, name string) (*corev1.Pod, string, error) {
	p, err := c.Client().CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, "", err
	}
	if len(p.Status.ContainerStatuses) == 0 {
		return nil, "", fmt.Errorf("%s/%s has no container", namespace, name)
	}
	return p, containerID(p.Status.ContainerStatuses[0]), nil
}
