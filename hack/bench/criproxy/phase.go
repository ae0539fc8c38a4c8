package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/internal/testbed"
)

const (
	modeDirect = "kubelet → containerd"
	modeProxy  = "kubelet → probelet proxy → containerd"

	podsTimeout = 5 * time.Minute
	eventWait   = 30 * time.Second
)

// bench holds what both phases share: one containerd test bed and the
// probelet binary built from this checkout.
type bench struct {
	ctx      context.Context
	r        *runner
	c        config
	bed      *testbed.Bed
	probelet string
}

func newBench(ctx context.Context, r *runner, c config) *bench {
	bed := testbed.Start(r)
	bin := filepath.Join(bed.Dir(), "probelet")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "grpcnotrace", "-o", bin, "./cmd/probelet")
	if out, err := cmd.CombinedOutput(); err != nil {
		r.Fatalf("go build ./cmd/probelet (run from the repository root): %v\n%s", err, out)
	}
	return &bench{ctx: ctx, r: r, c: c, bed: bed, probelet: bin}
}

// phaseResult is what one side measured.
type phaseResult struct {
	mode               string
	window             time.Duration
	containerdCPU      float64 // share of one core
	probeletCPU        float64 // proxy phase only
	kubeletCPU         float64
	relist             histogramDelta
	exitsBefore        []time.Duration
	exitsAfter         []time.Duration
	missedBefore       int
	missedAfter        int
	eventedConnections float64
	eventedConnErrors  float64
}

// phase runs one side: kubelet (and, for the proxy, probelet), N pods,
// the steady window, exits, a containerd restart, exits again.
func (b *bench) phase(mode string) (phaseResult, error) {
	res := phaseResult{mode: mode, window: b.c.window}
	if out, err := b.bed.Crictl("rmp", "-f", "-a"); err != nil {
		return res, fmt.Errorf("clearing the bed: %v: %s", err, out)
	}
	endpoint := b.bed.CRIEndpoint()
	var pl *probeletProc
	if mode == modeProxy {
		var err error
		if pl, err = startProbelet(b.ctx, b.bed, b.probelet); err != nil {
			return res, err
		}
		defer pl.stop()
		endpoint = pl.proxy
	}
	node := "bench-direct"
	if mode == modeProxy {
		node = "bench-proxy"
	}
	b.r.Logf("== %s: starting the kubelet and %d pods", mode, b.c.pods)
	k := cluster.StartStandaloneKubelet(b.r, b.bed, cluster.WithNodeName(node),
		cluster.WithCRIEndpoint(endpoint), cluster.WithImageEndpoint(endpoint),
		cluster.WithKubeletFeatureGates("EventedPLEG=true"), cluster.WithKubeletArgs("--v=2"))
	defer func() {
		if err := k.Stop(); err != nil {
			b.r.Errorf("stopping the kubelet: %v", err)
		}
	}()
	for i := range b.c.pods {
		name := fmt.Sprintf("idle-%d", i)
		if i < b.c.exits {
			name = fmt.Sprintf("exit-%d", i)
		}
		if err := k.AddStaticPod(name, podManifest(name)); err != nil {
			return res, err
		}
	}
	began := time.Now()
	if _, err := waitPods(b.ctx, k, b.c.pods, 0); err != nil {
		return res, err
	}
	b.r.Logf("   %d pods running after %v; measuring %v", b.c.pods, time.Since(began).Round(time.Second), b.c.window)

	if err := b.steady(k, pl, &res); err != nil {
		return res, err
	}
	b.r.Logf("   killing %d containers (Evented PLEG on)", b.c.exits)
	res.exitsBefore, res.missedBefore = b.exits(k, 0)
	if _, err := waitPods(b.ctx, k, b.c.pods, 1); err != nil {
		return res, err
	}
	b.r.Logf("   restarting containerd")
	if err := b.bed.RestartRuntime(); err != nil {
		return res, err
	}
	if _, err := waitPods(b.ctx, k, b.c.pods, 1); err != nil {
		return res, err
	}
	b.r.Logf("   killing %d containers again, after the containerd restart", b.c.exits)
	res.exitsAfter, res.missedAfter = b.exits(k, 1)
	metrics, err := kubeletMetrics(b.ctx, k)
	if err != nil {
		return res, err
	}
	res.eventedConnections = counter(metrics, "kubelet_evented_pleg_connection_success_count")
	res.eventedConnErrors = counter(metrics, "kubelet_evented_pleg_connection_error_count")
	return res, nil
}

// steady measures CPU and relist durations over the window.
func (b *bench) steady(k *cluster.Kubelet, pl *probeletProc, res *phaseResult) error {
	ctrd, err := b.bed.RuntimePID()
	if err != nil {
		return err
	}
	kpid, err := k.PID()
	if err != nil {
		return err
	}
	pids := []int{ctrd, kpid}
	if pl != nil {
		pids = append(pids, pl.cmd.Process.Pid)
	}
	before := make([]float64, len(pids))
	for i, pid := range pids {
		if before[i], err = cpuSeconds(pid); err != nil {
			return err
		}
	}
	m0, err := kubeletMetrics(b.ctx, k)
	if err != nil {
		return err
	}
	start := time.Now()
	// The window is the measurement: nothing happens on the node but the
	// kubelet's relists and housekeeping.
	select {
	case <-time.After(b.c.window):
	case <-b.ctx.Done():
		return b.ctx.Err()
	}
	elapsed := time.Since(start).Seconds()
	m1, err := kubeletMetrics(b.ctx, k)
	if err != nil {
		return err
	}
	share := make([]float64, len(pids))
	for i, pid := range pids {
		after, err := cpuSeconds(pid)
		if err != nil {
			return err
		}
		share[i] = (after - before[i]) / elapsed
	}
	res.containerdCPU, res.kubeletCPU = share[0], share[1]
	if pl != nil {
		res.probeletCPU = share[2]
	}
	res.relist = relistDelta(m0, m1)
	return nil
}

// exits kills each exit-N pod's running container (SIGKILL of its init
// process: an exit no CRI call announces) and measures containerd's
// finishedAt → the kubelet's "SyncLoop (PLEG)" ContainerDied line. attempt
// is the restart count the container being killed has.
func (b *bench) exits(k *cluster.Kubelet, attempt int32) ([]time.Duration, int) {
	var lat []time.Duration
	missed := 0
	for i := range b.c.exits {
		id, err := runningContainer(b.ctx, k, fmt.Sprintf("exit-%d-", i), attempt)
		if err != nil {
			b.r.Errorf("exit-%d: %v", i, err)
			missed++
			continue
		}
		d, err := b.killAndWait(k, id)
		if err != nil {
			b.r.Errorf("exit-%d: %v", i, err)
			missed++
			continue
		}
		lat = append(lat, d)
	}
	return lat, missed
}

func (b *bench) killAndWait(k *cluster.Kubelet, id string) (time.Duration, error) {
	pid, err := b.initPID(id)
	if err != nil {
		return 0, err
	}
	logFrom, err := fileSize(k.LogPath())
	if err != nil {
		return 0, err
	}
	if err := killPID(pid); err != nil {
		return 0, err
	}
	seen, err := waitPLEGDied(b.ctx, k.LogPath(), logFrom, id, eventWait)
	if err != nil {
		return 0, err
	}
	finished, err := b.finishedAt(id)
	if err != nil {
		return 0, err
	}
	return seen.Sub(finished), nil
}

// inspect is the part of crictl inspect the benchmark reads.
type inspect struct {
	Status struct {
		FinishedAt time.Time `json:"finishedAt"`
		State      string    `json:"state"`
	} `json:"status"`
	Info struct {
		Pid int `json:"pid"`
	} `json:"info"`
}

func (b *bench) inspect(id string) (inspect, error) {
	var in inspect
	out, err := b.bed.Crictl("inspect", id)
	if err != nil {
		return in, err
	}
	err = json.Unmarshal(out, &in)
	return in, err
}

func (b *bench) initPID(id string) (int, error) {
	in, err := b.inspect(id)
	if err != nil {
		return 0, err
	}
	if in.Info.Pid <= 0 {
		return 0, fmt.Errorf("container %s has no pid (%s)", id, in.Status.State)
	}
	return in.Info.Pid, nil
}

// finishedAt waits until containerd has recorded the exit.
func (b *bench) finishedAt(id string) (time.Time, error) {
	deadline := time.Now().Add(eventWait)
	for time.Now().Before(deadline) {
		in, err := b.inspect(id)
		if err != nil {
			return time.Time{}, err
		}
		if in.Status.State == "CONTAINER_EXITED" && !in.Status.FinishedAt.IsZero() {
			return in.Status.FinishedAt, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Time{}, errors.New("containerd did not record the exit of " + id)
}

func podManifest(name string) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    imagePullPolicy: Never
    command: [sleep, "36000"]
`, name, testbed.BusyboxImage)
}

// probeletProc is `probelet cri-proxy`, the proxy's own process.
type probeletProc struct {
	cmd   *exec.Cmd
	done  chan struct{}
	proxy string
	log   string
}

func startProbelet(ctx context.Context, bed *testbed.Bed, bin string) (*probeletProc, error) {
	p := &probeletProc{proxy: "unix://" + filepath.Join(bed.Dir(), "cri.sock"), log: filepath.Join(bed.Dir(), "probelet.log")}
	f, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p.cmd = exec.Command(bin, "cri-proxy", "--listen", p.proxy, "--runtime-endpoint", bed.CRIEndpoint(),
		"--metrics-bind-address", "127.0.0.1:0", "--log-format", "json")
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	p.done = make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile(p.log)
		if bytes.Contains(data, []byte("Resynchronised with the runtime")) {
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("probelet exited:\n%s", data)
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.stop()
	return nil, errors.New("probelet did not start within 20s; see " + p.log)
}

func (p *probeletProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}
