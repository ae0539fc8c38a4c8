//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/probelet/probelet/internal/apicount"
	"github.com/probelet/probelet/kube"
	"github.com/probelet/probelet/kube/heartbeat"
	"github.com/probelet/probelet/probespec"
)

const (
	// The kubelet's node Lease period and its node status report
	// frequency at steady state (kubelet config defaults: the status is
	// read from its own Node watch every 10 s and patched only when it
	// changed or 5 minutes passed).
	kubeletLeasePeriod  = 10 * time.Second
	kubeletStatusPeriod = 5 * time.Minute
	nodeLeaseNamespace  = "kube-node-lease"
	labelNode           = "scale.probelet.io/node"
	labelZone           = "scale.probelet.io/zone"
	region              = "scale"
)

// calls counts one simulated component's API calls by verb and resource.
type calls struct {
	mu sync.Mutex
	n  map[string]int64 // "verb resource"
}

func (c *calls) count(verb, resource string) {
	c.mu.Lock()
	c.n[verb+" "+resource]++
	c.mu.Unlock()
}

func (c *calls) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// counted returns cfg with every call counted in a fresh calls.
func counted(cfg *rest.Config) (*rest.Config, *calls) {
	c := &calls{n: map[string]int64{}}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(apicount.Wrapper(c.count))
	return cfg, c
}

// simNode is one simulated node: its probelet is silent while silent is
// set (the NRI connection lost: the heartbeat holds its Lease).
type simNode struct {
	name, zone string
	index      int
	silent     atomic.Bool
}

func (n *simNode) Connected() bool                                 { return !n.silent.Load() }
func (n *simNode) SchedulerLag() (lag time.Duration, running bool) { return 0, true }

// fleet is the simulated nodes: Node objects, each node's kubelet (its
// node Lease and status) and probelet (its Lease through probelet's own
// heartbeat code, and its watches), every call counted per component.
type fleet struct {
	nodes       []*simNode
	zones       []string
	admin       kubernetes.Interface
	probelet    kube.Client
	probeletAPI *calls
	kubelet     kubernetes.Interface
	kubeletAPI  *calls
	watchesOpen atomic.Int64
}

// smallZone is a zone of no more than --large-cluster-size-threshold
// nodes: its partial disruption marks nothing at all, where a large
// zone's marks at the secondary rate.
const smallZone = "small"

func newFleet(cp *controlPlane, nodes, zones, small int) (*fleet, error) {
	f := &fleet{admin: cp.admin}
	var err error
	pcfg, pcalls := counted(cp.cfg)
	pcfg.UserAgent = "probelet"
	f.probeletAPI = pcalls
	if f.probelet, err = kube.NewClient(pcfg, nil); err != nil {
		return nil, err
	}
	kcfg, kcalls := counted(cp.cfg)
	kcfg.UserAgent = "kubelet"
	if f.kubelet, err = kubernetes.NewForConfig(kcfg); err != nil {
		return nil, err
	}
	f.kubeletAPI = kcalls
	for z := range zones {
		f.zones = append(f.zones, fmt.Sprintf("zone-%d", z))
	}
	if small > 0 {
		f.zones = append(f.zones, smallZone)
	}
	for i := range nodes {
		zone := f.zones[i%zones]
		if i >= nodes-small {
			zone = smallZone
		}
		f.nodes = append(f.nodes, &simNode{name: fmt.Sprintf("node-%05d", i), zone: zone, index: i})
	}
	return f, nil
}

// createNodes creates the Nodes, Ready, labelled with their zone.
func (f *fleet) createNodes(ctx context.Context) error {
	return parallel(ctx, len(f.nodes), func(ctx context.Context, i int) error {
		n := f.nodes[i]
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{
			corev1.LabelHostname: n.name, corev1.LabelTopologyRegion: region, corev1.LabelTopologyZone: n.zone}}}
		created, err := f.admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		if err != nil {
			return err
		}
		now := metav1.Now()
		created.Status = corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nodeIP(n.index)},
				{Type: corev1.NodeHostName, Address: n.name}},
		}
		_, err = f.admin.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
		return err
	})
}

// nodeIP is a made-up address: nothing dials it.
func nodeIP(i int) string { return fmt.Sprintf("10.%d.%d.%d", 100+i/65536, i/256%256, i%256) }

// runKubelets renews each node's kubelet Lease every 10 s (as client-go's
// lease controller: an update of the last written Lease, no read) and
// patches its status every 5 minutes, the starts spread over a period.
func (f *fleet) runKubelets(ctx context.Context) {
	for _, n := range f.nodes {
		go f.kubeletLoop(ctx, n, time.Duration(rand.Int64N(int64(kubeletLeasePeriod))))
	}
}

func (f *fleet) kubeletLoop(ctx context.Context, n *simNode, offset time.Duration) {
	if !sleep(ctx, offset) {
		return
	}
	leases := f.kubelet.CoordinationV1().Leases(nodeLeaseNamespace)
	var lease *coordinationv1.Lease
	nextStatus := time.Now().Add(time.Duration(rand.Int64N(int64(kubeletStatusPeriod))))
	tick := time.NewTicker(kubeletLeasePeriod)
	defer tick.Stop()
	for {
		now := metav1.NewMicroTime(time.Now())
		var err error
		if lease == nil {
			lease, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: n.name},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(n.name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now}},
				metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				lease, err = leases.Get(ctx, n.name, metav1.GetOptions{})
			}
			if err != nil {
				lease = nil // created again next time
			}
		} else {
			next := lease.DeepCopy()
			next.Spec.RenewTime = &now
			if lease, err = leases.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
				lease = nil // a conflict or an error: read it again (Create finds it)
			}
		}
		if time.Now().After(nextStatus) {
			patch := fmt.Appendf(nil, `{"status":{"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":%q}]}}`,
				time.Now().UTC().Format(time.RFC3339))
			_, _ = f.kubelet.CoreV1().Nodes().PatchStatus(ctx, n.name, patch)
			nextStatus = nextStatus.Add(kubeletStatusPeriod)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// runProbelets starts each node's heartbeat (probelet's own code) and
// its watches, the starts spread over a renew interval as nodes' are.
func (f *fleet) runProbelets(ctx context.Context, watches bool) {
	for _, n := range f.nodes {
		go func() {
			if !sleep(ctx, time.Duration(rand.Int64N(int64(probespec.LeaseRenewInterval)))) {
				return
			}
			if watches {
				f.watch(ctx, f.probelet.NodePods(n.name), &corev1.Pod{})
				f.watch(ctx, f.probelet.Namespaces(), &corev1.Namespace{})
				f.watch(ctx, f.probelet.PodDisruptionBudgets(), nil)
			}
			hb, err := heartbeat.New(heartbeat.Options{Client: f.probelet, NodeName: n.name, Runtime: n, Scheduler: n})
			if err != nil {
				panic(err)
			}
			_ = hb.Run(ctx)
		}()
	}
}

// watch lists and watches lw as an informer does, keeping nothing: the
// API server's side of a node agent's watch is what is measured.
func (f *fleet) watch(ctx context.Context, lw cache.ListerWatcher, obj runtime.Object) {
	f.watchesOpen.Add(1)
	r := cache.NewReflectorWithOptions(lw, obj, discard{}, cache.ReflectorOptions{})
	go r.RunWithContext(ctx)
}

// leasesWritten waits until every node's probelet Lease exists.
func (f *fleet) leasesWritten(ctx context.Context) error {
	for {
		list, err := f.admin.CoordinationV1().Leases(probespec.LeaseNamespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err == nil && len(list.Items) >= len(f.nodes) {
			return nil
		}
		if !sleep(ctx, time.Second) {
			return ctx.Err()
		}
	}
}

// silence makes nodes' probelets silent and returns, per node, the
// last renewal its Lease holds: when it went silent, as the controller
// can know it.
func (f *fleet) silence(ctx context.Context, nodes []*simNode) (map[string]time.Time, error) {
	for _, n := range nodes {
		n.silent.Store(true)
	}
	// A renewal in flight as the flag was set lands within its call; the
	// heartbeat looks again every second.
	sleep(ctx, 2*time.Second)
	last := map[string]time.Time{}
	for _, n := range nodes {
		l, err := f.admin.CoordinationV1().Leases(probespec.LeaseNamespace).Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		last[n.name] = l.Spec.RenewTime.Time
	}
	return last, nil
}

// resume lets nodes' probelets renew again and rewrites their pods'
// conditions True, as probelet's readiness writer does once it renews.
func (f *fleet) resume(ctx context.Context, nodes []*simNode, pods *podSet) error {
	for _, n := range nodes {
		n.silent.Store(false)
	}
	sleep(ctx, 2*time.Second)
	var keys []types.NamespacedName
	for _, n := range nodes {
		keys = append(keys, pods.byNode[n.name]...)
	}
	return parallel(ctx, len(keys), func(ctx context.Context, i int) error {
		return pods.writeCondition(ctx, f.probelet, keys[i])
	})
}

// inZone returns the zone's nodes, in order.
func (f *fleet) inZone(zone string) []*simNode {
	var out []*simNode
	for _, n := range f.nodes {
		if n.zone == zone {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].index < out[j].index })
	return out
}

// discard is a cache.Store that keeps nothing.
type discard struct{}

func (discard) Add(any) error                      { return nil }
func (discard) Update(any) error                   { return nil }
func (discard) Delete(any) error                   { return nil }
func (discard) List() []any                        { return nil }
func (discard) ListKeys() []string                 { return nil }
func (discard) Get(any) (any, bool, error)         { return nil, false, nil }
func (discard) GetByKey(string) (any, bool, error) { return nil, false, nil }
func (discard) Replace([]any, string) error        { return nil }
func (discard) Resync() error                      { return nil }

// sleep waits d or until ctx ends; false if it ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// parallel runs do for 0..n-1 on a few workers; the first error ends it.
func parallel(ctx context.Context, n int, do func(ctx context.Context, i int) error) error {
	const workers = 48
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := do(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}
