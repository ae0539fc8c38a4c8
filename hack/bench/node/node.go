//go:build linux

package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/probespec"
	"github.com/probelet/probelet/quietio"
)

// variant is one way probelet runs a kind: TCP twice, the others once.
type variant struct {
	label   string // the table's row
	kind    kind
	tcpMode string // probelet's --tcp-mode
	io      string // probelet's --io
	method  string // probelet_tcp_probes_total method expected ("" for non-TCP)
	// origin is probelet's --probe-origin: "" (node, the kubelet's way)
	// or pod (each connection from the pod's own network namespace).
	origin string
}

func variants(k kind) []variant {
	// Each dialling kind again from the pod's own namespace (issue 46):
	// the socket made there, the connection the same.
	fromPod := func(v variant) variant {
		v.origin, v.label = "pod", v.label+" [--probe-origin pod]"
		return v
	}
	switch k {
	case kindTCP:
		dial := variant{"TCP (probelet: --tcp-mode dial)", k, "dial", quietio.Quiet, "dial", ""}
		return []variant{
			{"TCP (probelet: eBPF short-circuit)", k, "auto", quietio.Quiet, "ebpf", ""},
			dial, fromPod(dial),
		}
	case kindHTTP:
		v := variant{"HTTP GET", k, "auto", quietio.Quiet, "", ""}
		return []variant{v, fromPod(v)}
	case kindGRPC:
		v := variant{"gRPC", k, "auto", quietio.Quiet, "", ""}
		return []variant{v, fromPod(v)}
	}
	return []variant{{"exec (true), agent side only", k, "auto", quietio.Quiet, "", ""}}
}

// variantsIn are k's variants in each I/O mode of ios: under --io=std
// each again but the eBPF short-circuit (it does no I/O either way), its
// label saying so.
func variantsIn(k kind, ios []string) []variant {
	var out []variant
	for _, io := range ios {
		for _, v := range variants(k) {
			if io == quietio.Quiet {
				out = append(out, v)
				continue
			}
			if v.method == "ebpf" {
				continue
			}
			v.io, v.label = io, v.label+" [--io="+io+"]"
			out = append(out, v)
		}
	}
	return out
}

// row is one line of the table: the kubelet and probelet on the same pods.
type row struct {
	variant
	kubelet, probelet window
	// methodShare is the share of probelet's TCP runs answered by
	// method, the lowest of its rounds (-1 when not TCP).
	methodShare float64
}

// report is one pod count's measurements.
type report struct {
	n                         int
	kubeletBase, probeletBase window
	probeletDialBase          window
	hasDialBase               bool
	rows                      []row
	// floor is the wake-up floor in µs, measured before the pod count's
	// windows.
	floor float64
}

// measureNode runs every window for n pods: the no-probe baselines, then
// each kind with the kubelet alone and probelet alone.
func (e *env) measureNode(ctx context.Context, n int) (report, error) {
	r := report{n: n}
	var err error
	fmt.Fprintf(os.Stderr, "node bench: %d pods\n", n)
	if r.floor, err = wakeFloor(ctx, e.root, e.bed); err != nil {
		return r, err
	}
	e.logf("wake-up floor: %.1f cpu-µs", r.floor)
	if err := e.runPods(ctx, n, kindNone); err != nil {
		return r, err
	}
	if r.kubeletBase, err = e.measureKubelet(ctx); err != nil {
		return r, err
	}
	if err := e.kubelet.stop(ctx); err != nil {
		return r, err
	}
	if r.probeletBase, err = e.measureProbelet(ctx, n, variant{label: "baseline", kind: kindNone, tcpMode: "auto", io: quietio.Quiet}, nil); err != nil {
		return r, err
	}
	for _, k := range e.c.kinds {
		if k == kindTCP {
			r.hasDialBase = true
			if r.probeletDialBase, err = e.measureProbelet(ctx, n, variant{label: "baseline", kind: kindNone, tcpMode: "dial", io: quietio.Quiet}, nil); err != nil {
				return r, err
			}
		}
	}
	for _, k := range e.c.kinds {
		if err := e.runPods(ctx, n, k); err != nil {
			return r, err
		}
		rows := make([]row, 0, 2)
		for _, v := range variantsIn(k, e.c.ios) {
			rows = append(rows, row{variant: v, methodShare: -1})
		}
		// Rounds alternate which agent goes first (kubelet, probelet;
		// probelet, kubelet; …), so that a machine whose wake-ups got
		// dearer or cheaper meanwhile weighs on both alike.
		for round := range e.c.rounds {
			kubeletFirst := round%2 == 0
			if kubeletFirst {
				if err := e.kubeletRound(ctx, round, rows); err != nil {
					return r, err
				}
			}
			for i := range rows {
				w, err := e.measureProbelet(ctx, n, rows[i].variant, &rows[i].methodShare)
				if err != nil {
					return r, err
				}
				rows[i].probelet = rows[i].probelet.merge(w)
			}
			if !kubeletFirst {
				if err := e.kubeletRound(ctx, round, rows); err != nil {
					return r, err
				}
			}
		}
		r.rows = append(r.rows, rows...)
	}
	return r, nil
}

// kubeletRound measures the kubelet for every row of a kind and stops it
// again; after the first round it is started first (runPods started it
// for the first).
func (e *env) kubeletRound(ctx context.Context, round int, rows []row) error {
	if round > 0 {
		if err := e.kubelet.start(ctx); err != nil {
			return err
		}
	}
	kw, err := e.measureKubelet(ctx)
	if err != nil {
		return err
	}
	for i := range rows {
		rows[i].kubelet = rows[i].kubelet.merge(kw)
	}
	return e.kubelet.stop(ctx)
}

// runPods makes the kubelet run n pods of kind k (it is started if it was
// stopped; probelet is not running) and waits until they all run and the
// kubelet reports them ready, and no other pod of ours is left.
func (e *env) runPods(ctx context.Context, n int, k kind) error {
	e.logf("%d pods of kind %s", n, k)
	if err := e.kubelet.stop(ctx); err != nil {
		return err
	}
	// The old pods go before the kubelet starts again: a restarted kubelet
	// takes a minute to clean up static pods whose manifests went away.
	if err := e.removePods(ctx); err != nil {
		return err
	}
	if err := writeManifests(e.kubelet.manifests, n, k, e.appDir); err != nil {
		return err
	}
	if err := e.kubelet.start(ctx); err != nil {
		return err
	}
	want := ""
	if p := probeOf(k); p != nil {
		data, err := json.Marshal(probespec.PodProbes{"app": {Readiness: p}})
		if err != nil {
			return err
		}
		want = string(data)
	}
	began := time.Now()
	deadline := began.Add(time.Duration(n)*3*time.Second + 2*time.Minute)
	last := ""
	for time.Now().Before(deadline) {
		ready, others, err := e.readyPods(ctx, want)
		if err != nil {
			return err
		}
		if cur := fmt.Sprintf("%d of %d ready, %d others", ready, n, others); cur != last {
			e.logf("  %s after %v", cur, time.Since(began).Round(time.Second))
			last = cur
		}
		if ready == n && others == 0 {
			e.logf("%s after %v", last, time.Since(began).Round(time.Second))
			return nil
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	return fmt.Errorf("pods of kind %s: %s after %v", k, last, time.Since(began).Round(time.Second))
}

// removePods stops and removes every sandbox of ours through CRI.
func (e *env) removePods(ctx context.Context) error {
	pods, err := e.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return err
	}
	for _, p := range pods.GetItems() {
		if !strings.HasPrefix(p.GetMetadata().GetName(), "nb-") {
			continue
		}
		if _, err := e.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.GetId()}); err != nil {
			return err
		}
		if _, err := e.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.GetId()}); err != nil {
			return err
		}
	}
	return nil
}

// readyPods counts our sandboxes whose probes annotation is want and whose
// app container runs (capped, when the pods have a probe, by the pods the
// kubelet reports Ready: its probe has succeeded), and our sandboxes with
// another annotation (old pods still going away).
func (e *env) readyPods(ctx context.Context, want string) (ready, others int, err error) {
	pods, err := e.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return 0, 0, err
	}
	ctrs, err := e.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	}})
	if err != nil {
		return 0, 0, err
	}
	running := map[string]bool{}
	for _, c := range ctrs.GetContainers() {
		running[c.GetPodSandboxId()] = true
	}
	for _, p := range pods.GetItems() {
		if !strings.HasPrefix(p.GetMetadata().GetName(), "nb-") {
			continue
		}
		switch {
		case p.GetAnnotations()[probespec.AnnotationProbes] != want:
			others++
		case p.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY && running[p.GetId()]:
			ready++
		}
	}
	if ready == 0 || want == "" {
		return ready, others, nil
	}
	// With a probe, the pods count once the kubelet's readiness is true.
	probing, err := e.kubeletReady(ctx)
	return min(ready, probing), others, err
}

// kubeletReady counts the pods the kubelet's read-only /pods lists as Ready.
func (e *env) kubeletReady(ctx context.Context) (int, error) {
	var list struct {
		Items []struct {
			Status struct {
				Conditions []struct{ Type, Status string }
			}
		}
	}
	body, err := get(ctx, e.kubelet.readOnly+"/pods")
	if err != nil {
		return 0, err
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return 0, err
	}
	n := 0
	for _, p := range list.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == "Ready" && c.Status == "True" {
				n++
			}
		}
	}
	return n, nil
}

// measureKubelet measures the running kubelet once its pods settled.
func (e *env) measureKubelet(ctx context.Context) (window, error) {
	if err := sleep(ctx, e.c.kSettle); err != nil {
		return window{}, err
	}
	return e.measure(ctx, e.kubelet)
}

// measureProbelet starts probelet for v, waits until it probes every pod
// (none for the baseline), settles, measures and stops it. share, when
// given for a TCP variant, receives the share of runs answered by v.method.
func (e *env) measureProbelet(ctx context.Context, n int, v variant, share *float64) (window, error) {
	e.logf("probelet (--tcp-mode %s --io %s --probe-origin %s), %s", v.tcpMode, v.io, cmp.Or(v.origin, "node"), v.label)
	p, err := e.startProbelet(ctx, v.tcpMode, v.io, v.origin)
	if err != nil {
		return window{}, err
	}
	defer p.stop()
	if v.kind != kindNone {
		if err := p.waitProbing(ctx, n); err != nil {
			return window{}, err
		}
	}
	if err := sleep(ctx, e.c.settle); err != nil {
		return window{}, err
	}
	before, err := p.scrape(ctx)
	if err != nil {
		return window{}, err
	}
	w, err := e.measure(ctx, p)
	if err != nil {
		return w, err
	}
	if share != nil && v.method != "" {
		after, err := p.scrape(ctx)
		if err != nil {
			return w, err
		}
		mf := "probelet_tcp_probes_total"
		all := sum(after[mf], nil) - sum(before[mf], nil)
		via := sum(after[mf], map[string]string{"method": v.method}) - sum(before[mf], map[string]string{"method": v.method})
		// The lowest share over the rounds: one round that dialed is
		// enough to make the row's numbers a dial's.
		if all > 0 && (*share < 0 || via/all < *share) {
			*share = via / all
		}
	}
	return w, nil
}

// waitProbing waits until probelet has a successful run for each of the n
// pods' probes.
func (p *probelet) waitProbing(ctx context.Context, n int) error {
	deadline := time.Now().Add(time.Minute)
	got := 0
	for time.Now().Before(deadline) {
		mfs, err := p.scrape(ctx)
		if err != nil {
			return err
		}
		if got = series(mfs["prober_probe_total"], map[string]string{"result": "successful"}); got >= n {
			return nil
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("probelet probes %d of %d pods successfully after a minute; see %s", got, n, p.log)
}
