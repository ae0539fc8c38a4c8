//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probelet/probelet/probespec"
)

// result is one size's figures.
type result struct {
	nodes, pods int
	kubelets    bool // simulated beside probelet
	setup       time.Duration

	// etcd after compaction and defragmentation, and the API server's
	// live heap, before and after probelet's objects were written.
	etcdBefore, etcdAfter int64
	heapBefore, heapAfter float64
	apiserverRSS          int64 // at steady state

	// steady state
	leader, follower        usageFigures
	controllerCalls         rates // the leader's + the follower's, per second
	probeletCalls           rates // per node per second
	kubeletCalls            rates // per node per second
	watchesPerNode          float64
	steadyWindow            time.Duration
	probeletWritesPerChange float64

	// a silent node's pods
	silentPods, silentMarked  int
	markP50, markP99, markMax time.Duration

	// the zone rules
	bigZone, smallZone zoneFigures

	// leader change
	handover          time.Duration
	takeover          usageFigures // the new leader, from the old one's SIGTERM to 30 s after it took over
	remarks           int64        // marks the new leader wrote on pods already marked
	remarkCalls       int64        // its pods/status patches meanwhile
	marksBeforeChange int

	// churn through the webhook
	churnCreated             int
	churnRate                float64
	churnConverted           int
	webhookP50, webhookP99   float64 // seconds, from the API server's histogram
	churnLeader, churnFollow usageFigures
	webhookServedBy          string // "leader" or "follower": the webhook's URL names one replica
	webhookOwnP50            float64
	webhookOwnP99            float64        // seconds, the replica's own histogram
	webhookResults           map[string]int // the replica's admissions by result
}

type usageFigures struct {
	cores float64
	rss   int64
	peak  int64
}

func figures(s *sampler) usageFigures {
	return usageFigures{cores: s.cores(), rss: s.last.rss, peak: s.peak}
}

type zoneFigures struct {
	name           string
	size, silenced int
	marked         int
	window         time.Duration
}

// rates is calls per second by "verb resource".
type rates map[string]float64

func ratesOf(before, after map[string]int64, per float64, window time.Duration) rates {
	out := rates{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = float64(d) / per / window.Seconds()
		}
	}
	return out
}

// run measures one size of n nodes against the checkout at root; the
// replicas' logs go under work.
func run(ctx context.Context, c config, root, work string, n int) (_ *result, err error) {
	r := &result{nodes: n, pods: n * c.perNode, kubelets: n <= c.kubeletsUpTo}
	logs := filepath.Join(work, fmt.Sprint(n))
	if err := os.Mkdir(logs, 0o755); err != nil {
		return nil, err
	}
	logf("%d nodes: starting etcd and kube-apiserver", n)
	cp, err := startControlPlane(ctx, root)
	if err != nil {
		return nil, err
	}
	defer func() {
		if c.keep {
			logf("kept the control plane in %s (hack/cluster/down.sh %s)", cp.dir, cp.dir)
			return
		}
		cp.stop()
	}()
	simCtx, stopSim := context.WithCancel(ctx)
	defer stopSim()
	f, err := newFleet(cp, n, c.zones, c.smallZone)
	if err != nil {
		return nil, err
	}
	for _, ns := range []string{probespec.LeaseNamespace, "scale-managed"} {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if ns == "scale-managed" {
			obj.Labels = map[string]string{probespec.LabelProbes: probespec.LabelManaged}
		}
		if _, err := cp.admin.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}

	start := time.Now()
	logf("creating %d Nodes", n)
	if err := f.createNodes(ctx); err != nil {
		return nil, err
	}
	if r.kubelets {
		f.runKubelets(simCtx)
	}
	logf("creating %d gated pods, their status written as the kubelet does", r.pods)
	pods, err := createPods(ctx, f, c.perNode)
	if err != nil {
		return nil, err
	}
	r.setup = time.Since(start)
	logf("setup took %s; measuring etcd and the API server before probelet's objects", r.setup.Round(time.Second))
	if r.etcdBefore, r.heapBefore, err = footprint(ctx, cp); err != nil {
		return nil, err
	}

	logf("starting %d probelets (heartbeat and watches) and writing every pod's condition", n)
	f.runProbelets(simCtx, n <= c.watchesUpTo)
	if err := f.leasesWritten(ctx); err != nil {
		return nil, err
	}
	if err := pods.writeConditions(ctx, f.probelet); err != nil {
		return nil, err
	}
	if r.etcdAfter, r.heapAfter, err = footprint(ctx, cp); err != nil {
		return nil, err
	}

	marks, err := watchMarks(simCtx, cp.admin)
	if err != nil {
		return nil, err
	}
	logf("starting two probelet-controller replicas")
	var replicas []*replica
	for i := range 2 {
		rep, err := newReplica(c.controller, logs, cp.kubeconfig(), fmt.Sprintf("controller-%d", i), c.grace)
		if err != nil {
			return nil, err
		}
		replicas = append(replicas, rep)
	}
	if err := createWebhookConfig(ctx, cp.admin, "https://"+replicas[0].webhook+"/mutate-pods"); err != nil {
		return nil, err
	}
	for _, rep := range replicas {
		if err := rep.start(); err != nil {
			return nil, err
		}
		defer rep.stop(syscall.SIGKILL)
	}
	leader, _, err := waitLogged(ctx, replicas, "Monitoring probelet Leases", start, 5*time.Minute)
	if err != nil {
		return nil, err
	}
	follower := replicas[0]
	if follower == leader {
		follower = replicas[1]
	}
	if err := caBundleSet(ctx, cp.admin, time.Minute); err != nil {
		return nil, err
	}
	// The first pass's judgement settles over the grace period; steady
	// state starts after it.
	sleep(ctx, c.grace)

	logf("steady state for %s", c.steady)
	if err := r.measureSteady(ctx, c, cp, f, leader, follower); err != nil {
		return r, err
	}

	logf("silencing %d probelets, one per zone", c.silentNodes)
	var silent []*simNode
	for z := range c.silentNodes {
		silent = append(silent, f.inZone(f.zones[z])[0])
	}
	if err := r.measureSilent(ctx, c, f, pods, marks, silent); err != nil {
		return r, err
	}

	logf("leader change: SIGTERM to the leader, the silent nodes' pods marked")
	if err := r.measureLeaderChange(ctx, c, leader, follower); err != nil {
		return r, err
	}
	leader, follower = follower, leader
	if err := follower.start(); err != nil {
		return r, err
	}
	before := f.probeletAPI.snapshot()
	if err := f.resume(ctx, silent, pods); err != nil {
		return r, err
	}
	changes := 0
	for _, s := range silent {
		changes += len(pods.byNode[s.name])
	}
	r.probeletWritesPerChange = float64(f.probeletAPI.snapshot()["patch pods/status"]-before["patch pods/status"]) / float64(changes)

	logf("zone rules: 60%% of %s and of the small zone silent", f.zones[0])
	if err := r.measureZones(ctx, c, f, pods, marks); err != nil {
		return r, err
	}

	logf("churn: %d pod creates a second through the webhook for %s", c.churnRate, c.churn)
	if err := r.measureChurn(ctx, c, cp, f, leader, follower); err != nil {
		return r, err
	}
	return r, nil
}

// footprint compacts etcd and reads its size, and the API server's heap.
func footprint(ctx context.Context, cp *controlPlane) (int64, float64, error) {
	// Writes settle into the watch cache and the heap.
	sleep(ctx, 10*time.Second)
	size, err := cp.etcdCompactedSize(ctx)
	if err != nil {
		return 0, 0, err
	}
	fams, err := cp.apiserverMetrics(ctx)
	if err != nil {
		return 0, 0, err
	}
	// The heap live at the last collection: the collector's next goal
	// is twice it at GOGC 100 (the API server's), where the heap in use
	// also holds garbage not collected yet.
	return size, gauge(fams, "go_memstats_next_gc_bytes") / 2, nil
}

func (r *result) measureSteady(ctx context.Context, c config, cp *controlPlane, f *fleet, leader, follower *replica) error {
	lc, err := leader.apiCalls(ctx)
	if err != nil {
		return err
	}
	fc, err := follower.apiCalls(ctx)
	if err != nil {
		return err
	}
	pb, kb := f.probeletAPI.snapshot(), f.kubeletAPI.snapshot()
	ls, fs := sample(ctx, leader.pid()), sample(ctx, follower.pid())
	start := time.Now()
	sleep(ctx, c.steady)
	r.steadyWindow = time.Since(start)
	r.leader, r.follower = figures(ls.end()), figures(fs.end())
	la, err := leader.apiCalls(ctx)
	if err != nil {
		return err
	}
	fa, err := follower.apiCalls(ctx)
	if err != nil {
		return err
	}
	r.controllerCalls = ratesOf(lc, la, 1, r.steadyWindow)
	for k, v := range ratesOf(fc, fa, 1, r.steadyWindow) {
		r.controllerCalls[k] += v
	}
	nodes := float64(len(f.nodes))
	r.probeletCalls = ratesOf(pb, f.probeletAPI.snapshot(), nodes, r.steadyWindow)
	r.kubeletCalls = ratesOf(kb, f.kubeletAPI.snapshot(), nodes, r.steadyWindow)
	r.watchesPerNode = float64(f.watchesOpen.Load()) / nodes
	if u, err := usageOf(cp.pid("kube-apiserver")); err == nil {
		r.apiserverRSS = u.rss
	}
	return nil
}

func (r *result) measureSilent(ctx context.Context, c config, f *fleet, pods *podSet, marks *markWatch, silent []*simNode) error {
	from := time.Now()
	last, err := f.silence(ctx, silent)
	if err != nil {
		return err
	}
	for _, s := range silent {
		r.silentPods += len(pods.byNode[s.name])
	}
	// Every pod marked, or grace + 10 s and a pass past it.
	deadline := from.Add(c.grace + 20*time.Second)
	for time.Now().Before(deadline) {
		if n := countMarks(marks.firstMarks(last, from)); n >= r.silentPods {
			break
		}
		sleep(ctx, 200*time.Millisecond)
	}
	var lat []time.Duration
	for node, ats := range marks.firstMarks(last, from) {
		for _, at := range ats {
			lat = append(lat, at.Sub(last[node]))
		}
	}
	r.silentMarked = len(lat)
	r.markP50, r.markP99, r.markMax = quantile(lat, 0.5), quantile(lat, 0.99), quantile(lat, 1)
	r.marksBeforeChange = r.silentMarked
	return nil
}

func countMarks(m map[string][]time.Time) int {
	n := 0
	for _, ats := range m {
		n += len(ats)
	}
	return n
}

// quantile is the q-quantile of ds (nearest rank); 0 for none.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func (r *result) measureLeaderChange(ctx context.Context, c config, leader, next *replica) error {
	calls0, err := next.apiCalls(ctx)
	if err != nil {
		return err
	}
	s := sample(ctx, next.pid())
	killed := time.Now()
	go leader.stop(syscall.SIGTERM)
	_, took, err := waitLogged(ctx, []*replica{next}, "Monitoring probelet Leases", killed, 5*time.Minute)
	if err != nil {
		return err
	}
	r.handover = took.Sub(killed)
	sleep(ctx, time.Until(took.Add(30*time.Second)))
	r.takeover = figures(s.end())
	// The new leader gives every node the whole grace period: past it
	// and a pass, the still silent nodes' pods are judged again.
	sleep(ctx, time.Until(took.Add(c.grace+15*time.Second)))
	fams, err := next.scrape(ctx)
	if err != nil {
		return err
	}
	r.remarks = int64(gauge(fams, "probelet_controller_pods_marked_total"))
	calls, err := next.apiCalls(ctx)
	if err != nil {
		return err
	}
	r.remarkCalls = calls["patch pods/status"] - calls0["patch pods/status"]
	return nil
}

func (r *result) measureZones(ctx context.Context, c config, f *fleet, pods *podSet, marks *markWatch) error {
	big, small := f.inZone(f.zones[0]), f.inZone(smallZone)
	r.bigZone = zoneFigures{name: f.zones[0], size: len(big), silenced: len(big) * 6 / 10}
	r.smallZone = zoneFigures{name: smallZone, size: len(small), silenced: len(small) * 6 / 10}
	silent := slices.Concat(big[:r.bigZone.silenced], small[:r.smallZone.silenced])
	from := time.Now()
	if _, err := f.silence(ctx, silent); err != nil {
		return err
	}
	window := c.grace + 60*time.Second
	sleep(ctx, time.Until(from.Add(window)))
	for _, m := range marks.since(from) {
		switch m.zone {
		case r.bigZone.name:
			r.bigZone.marked++
		case smallZone:
			r.smallZone.marked++
		}
	}
	r.bigZone.window, r.smallZone.window = window-c.grace, window-c.grace
	return f.resume(ctx, silent, pods)
}

func (r *result) measureChurn(ctx context.Context, c config, cp *controlPlane, f *fleet, leader, follower *replica) error {
	before, err := cp.apiserverMetrics(ctx)
	if err != nil {
		return err
	}
	served := follower // the webhook's URL names controller-0
	if leader.name == "controller-0" {
		served = leader
	}
	ownBefore, err := served.scrape(ctx)
	if err != nil {
		return err
	}
	ls, fs := sample(ctx, leader.pid()), sample(ctx, follower.pid())
	var created atomic.Int64
	var failed atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(c.churnRate))
	start := time.Now()
	for i := 0; time.Since(start) < c.churn; i++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		node := f.nodes[i%len(f.nodes)].name
		wg.Go(func() {
			pod := managedPod(fmt.Sprintf("churn-%06d", i), node)
			if _, err := cp.admin.CoreV1().Pods("scale-managed").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				failed.Add(1)
				errOnce.Do(func() { firstErr = err })
				return
			}
			created.Add(1)
		})
	}
	tick.Stop()
	wg.Wait()
	elapsed := time.Since(start)
	r.churnLeader, r.churnFollow = figures(ls.end()), figures(fs.end())
	r.webhookServedBy = "follower"
	if served == leader {
		r.webhookServedBy = "leader"
	}
	if failed.Load() > 0 {
		return fmt.Errorf("%d of the churn's creates failed: %w", failed.Load(), firstErr)
	}
	r.churnCreated = int(created.Load())
	r.churnRate = float64(r.churnCreated) / elapsed.Seconds()
	after, err := cp.apiserverMetrics(ctx)
	if err != nil {
		return err
	}
	const hist = "apiserver_admission_webhook_admission_duration_seconds"
	delta := histogramDelta(before[hist], after[hist], "name", "namespaces.probelet.io")
	r.webhookP50, r.webhookP99 = delta.quantile(0.5), delta.quantile(0.99)
	ownAfter, err := served.scrape(ctx)
	if err != nil {
		return err
	}
	const own = "probelet_webhook_admission_duration_seconds"
	ownDelta := histogramDelta(ownBefore[own], ownAfter[own], "", "")
	r.webhookOwnP50, r.webhookOwnP99 = ownDelta.quantile(0.5), ownDelta.quantile(0.99)
	r.webhookResults = map[string]int{}
	if f := ownAfter["probelet_webhook_admissions_total"]; f != nil {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if l.GetName() == "result" {
					r.webhookResults[l.GetValue()] = int(m.Counter.GetValue() - gauge(ownBefore, "probelet_webhook_admissions_total", "result", l.GetValue()))
				}
			}
		}
	}
	list, err := cp.admin.CoreV1().Pods("scale-managed").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, p := range list.Items {
		if p.Annotations[probespec.AnnotationProbes] != "" && len(p.Spec.ReadinessGates) > 0 {
			r.churnConverted++
		}
	}
	return nil // the churn's pods go with the control plane
}
