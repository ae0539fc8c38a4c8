//go:build linux

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/grpcprobe"
	"github.com/probelet/probelet/prober/probe/httpprobe"
	"github.com/probelet/probelet/prober/probe/tcpprobe"
	"github.com/probelet/probelet/probespec"
)

const (
	agentArg      = "agent"
	modelKubelet  = "kubelet"
	modelProbelet = "probelet"
	period        = time.Second
	timeout       = time.Second
)

// runAgent runs one model for one kind in a process of its own and reads
// its report.
func runAgent(ctx context.Context, c config, model, kind string, port int) (sample, error) {
	self, err := os.Executable()
	if err != nil {
		return sample{}, err
	}
	cmd := exec.CommandContext(ctx, self, agentArg, "-model", model, "-kind", kind,
		"-pods", strconv.Itoa(c.pods), "-port", strconv.Itoa(port), "-window", c.window.String())
	cmd.Env = os.Environ()
	if c.cpus > 0 {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(c.cpus))
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return sample{}, err
	}
	return decode(out)
}

// agentMain is one agent process: an idle window, then the workers, a
// settling period and the measured window.
func agentMain(args []string) error {
	fs := flag.NewFlagSet(agentArg, flag.ContinueOnError)
	model := fs.String("model", modelProbelet, "kubelet or probelet")
	kind := fs.String("kind", "tcp", "tcp, http or grpc")
	pods := fs.Int("pods", 20, "workers")
	port := fs.Int("port", 0, "the targets' port for kind")
	window := fs.Duration("window", 10*time.Second, "measured window")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var a agent
	switch *model {
	case modelKubelet:
		a = &kubeletModel{kind: *kind, port: *port}
	case modelProbelet:
		a = &probeletModel{kind: *kind, port: *port}
	default:
		return fmt.Errorf("unknown model %q", *model)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	idle := max(*window/3, 2*time.Second)
	// Workers start spread over their period, as pods on a node do: the
	// engine spreads those it gets within a period of its own start.
	if err := a.start(ctx, time.Now().Add(idle)); err != nil {
		return err
	}
	s := sample{Model: *model, Kind: *kind, Procs: runtime.GOMAXPROCS(0)}
	u0, t0 := usage(), time.Now()
	time.Sleep(idle)
	u1, t1 := usage(), time.Now()
	s.IdleCPUNs, s.IdleSwitches, s.IdleWindowNs = u1.cpu-u0.cpu, u1.switches-u0.switches, int64(t1.Sub(t0))

	a.add(*pods)
	time.Sleep(2 * period) // every worker started and on its grid
	p0, f0 := a.counts()
	u0, t0 = usage(), time.Now()
	time.Sleep(*window)
	u1, t1 = usage(), time.Now()
	p1, f1 := a.counts()
	s.CPUNs, s.Switches, s.WindowNs = u1.cpu-u0.cpu, u1.switches-u0.switches, int64(t1.Sub(t0))
	s.Probes, s.Failed = p1-p0, f1-f0
	s.MaxRSSKiB = u1.maxRSS
	s.GoroutinesEnd = runtime.NumGoroutine()
	return json.NewEncoder(os.Stdout).Encode(s)
}

type rusage struct{ cpu, switches, maxRSS int64 }

// usage is the process's CPU time (every thread, exited ones included),
// voluntary context switches and peak RSS.
func usage() rusage {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts)
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return rusage{cpu: ts.Nano(), switches: ru.Nvcsw, maxRSS: ru.Maxrss}
}

// agent is one model of probing.
type agent interface {
	start(ctx context.Context, workersFrom time.Time) error
	add(n int)
	// counts are the probes run so far and those that did not succeed.
	counts() (probes, failed int64)
}

// probeletModel is probelet's engine as the agent builds it, with its real
// handlers, fed pods as the node cache would.
type probeletModel struct {
	kind string
	port int
	reg  *prometheus.Registry
	m    *prober.Manager
}

func (p *probeletModel) start(ctx context.Context, workersFrom time.Time) error {
	p.reg = prometheus.NewRegistry()
	opts := []prober.Option{prober.WithRegisterer(p.reg), prober.WithAgentStartTime(workersFrom)}
	m, err := prober.NewManager(opts...)
	if err != nil {
		return err
	}
	p.m = m
	go func() { _ = m.Run(ctx) }()
	return nil
}

func (p *probeletModel) add(n int) {
	anno, err := json.Marshal(probespec.PodProbes{"app": {Readiness: probeOf(p.kind, p.port)}})
	if err != nil {
		panic(err)
	}
	now := time.Now()
	for i := range n {
		p.m.UpdatePod(node.Pod{
			UID: fmt.Sprintf("uid-%03d", i), Name: fmt.Sprintf("eb-%03d", i), Namespace: "default",
			SandboxID: fmt.Sprintf("sb-%03d", i), CreatedAt: now, IPs: []string{"127.0.0.1"},
			Annotations: map[string]string{probespec.AnnotationProbes: string(anno)},
			Containers: []node.Container{{
				ID: fmt.Sprintf("ctr-%03d", i), Name: "app", CreatedAt: now, StartedAt: now, State: node.StateRunning,
			}},
		})
	}
}

func (p *probeletModel) counts() (probes, failed int64) {
	mfs, err := p.reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "prober_probe_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			v := int64(m.GetCounter().GetValue())
			probes += v
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() != "successful" {
					failed += v
				}
			}
		}
	}
	return probes, failed
}

// probeOf is a readiness probe of kind at period 1 s on the pod's IP.
func probeOf(kind string, port int) *corev1.Probe {
	p := &corev1.Probe{PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
	switch kind {
	case "tcp":
		p.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt(port)}
	case "http":
		p.HTTPGet = &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt(port), Scheme: corev1.URISchemeHTTP}
	case "grpc":
		p.GRPC = &corev1.GRPCAction{Port: int32(port)}
	}
	return p
}

// kubeletModel is the kubelet's prober in miniature: a goroutine per
// worker sleeping on its own ticker after a random start delay, running the
// probe on that goroutine with the same handlers probelet uses (their
// kubelet-equivalent dial, request and RPC), and keeping results in a map
// under a lock as the kubelet's results manager does.
type kubeletModel struct {
	kind    string
	port    int
	ctx     context.Context
	mu      sync.Mutex
	results map[int]probe.Result
	probes  atomic.Int64
	failed  atomic.Int64
	http    *httpprobe.Prober
	dialer  *tcpprobe.Dialer
}

func (k *kubeletModel) start(ctx context.Context, _ time.Time) error {
	k.ctx, k.results = ctx, map[int]probe.Result{}
	k.http, k.dialer = httpprobe.New(httpprobe.WithNetHTTPTransport()), tcpprobe.NewDialer()
	return nil
}

func (k *kubeletModel) add(n int) {
	for i := range n {
		go k.worker(i)
	}
}

func (k *kubeletModel) worker(i int) {
	// The kubelet's worker sleeps a random part of its period first.
	time.Sleep(time.Duration(rand.Float64() * float64(period)))
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		res := k.probe()
		k.probes.Add(1)
		if res != probe.Success {
			k.failed.Add(1)
		}
		k.mu.Lock()
		k.results[i] = res
		k.mu.Unlock()
		select {
		case <-k.ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (k *kubeletModel) probe() probe.Result {
	ctx := context.Background()
	var res probe.Result
	switch k.kind {
	case "tcp":
		res, _, _, _ = k.dialer.ProbeTCP(ctx, probe.TCPTarget{Host: "127.0.0.1", Port: k.port, Timeout: timeout})
	case "http":
		res, _, _ = k.http.Probe(ctx, httpprobe.Target{Scheme: corev1.URISchemeHTTP, Host: "127.0.0.1", Port: k.port, Path: "/", Timeout: timeout})
	case "grpc":
		res, _, _ = grpcprobe.ProbeWithGRPCGo(ctx, "127.0.0.1", k.port, "", timeout)
	}
	return res
}

func (k *kubeletModel) counts() (probes, failed int64) {
	return k.probes.Load(), k.failed.Load()
}
