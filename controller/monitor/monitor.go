// Package monitor is probelet-controller's Lease monitor: it watches
// probelet's node Leases, the Nodes and the pods, judges each node's
// probelet with the zone rules (controller/zones) every monitor period,
// and marks the gated pods of a Ready node whose probelet is silent not
// Ready (controller/marking) through a rate limit per zone. Run it while
// leading: a new leader starts with a fresh judgement, and every node gets
// the whole grace period.
package monitor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/controller/marking"
	"github.com/probelet/probelet/controller/zones"
	"github.com/probelet/probelet/probespec"
)

const (
	// DefaultPeriod is how often nodes are judged, the node lifecycle
	// controller's --node-monitor-period.
	DefaultPeriod = zones.MonitorPeriod
	// echoWait bounds how long a marking the informer does not show yet
	// keeps its pod from being marked again.
	echoWait = 30 * time.Second
	// markWriters is how many marks are written at once, and markTimeout
	// bounds each write: a hung API call holds one writer for seconds,
	// never the judging loop or another zone's marks. markTimeout is
	// below echoWait, so a pod is never marked again while a write of its
	// mark may still land.
	markWriters = 8
	markTimeout = 10 * time.Second
	// markPeriod is how often the zones' queues are served, the node
	// lifecycle controller's nodeEvictionPeriod: with burst 1, a zone's
	// rate is met up to 10 markings a second.
	markPeriod = 100 * time.Millisecond
	// DefaultGracePeriod is --grace-period: four missed renewals.
	DefaultGracePeriod = 40 * time.Second
	// byNode indexes pods by spec.nodeName.
	byNode = "byNode"
)

// Options are the monitor's inputs.
type Options struct {
	Client    kubernetes.Interface
	Namespace string // the Leases' (--lease-namespace)
	Grace     time.Duration
	// Renew is how often probelets renew their Leases
	// (--lease-renew-interval; default probespec.LeaseRenewInterval).
	Renew    time.Duration
	Zones    zones.Config
	Recorder record.EventRecorder // Warning Events on marked pods; nil: none
	Clock    clock.WithTicker     // default real
	Log      *zap.Logger
	// OnState is told each zone's state after every pass (metrics), the
	// zone as region/zone ("" for unlabelled nodes).
	OnState func(zone string, s zones.State)
	// OnMarked is told each pod marked, by reason (metrics).
	OnMarked func(reason string)
	// Informers is the cluster-wide informer factory to share with the
	// controller's other parts (one list and watch of every pod); nil:
	// the Monitor makes its own.
	Informers informers.SharedInformerFactory
}

// Monitor marks the pods of silent probelets. Run it once per leadership.
type Monitor struct {
	o       Options
	tracker *zones.Tracker
	mon     *zones.Monitor
	lim     *zones.Limiters
	all     informers.SharedInformerFactory // cluster-wide
	inNS    informers.SharedInformerFactory // the Lease namespace
	ownAll  bool                            // all is the Monitor's to shut down
	leases  cache.SharedIndexInformer
	nodes   cache.SharedIndexInformer
	pods    cache.SharedIndexInformer
	// queue holds, per zone, the pods waiting for a token, in order.
	queue map[string][]queued
	// writes are the marks handed to the writers (markWriters), each
	// written once however often it is added while queued.
	writes workqueue.TypedInterface[write]
	// marked are the pods marked (or being written) whose informer copy
	// does not show it yet: nothing is marked twice. The writers drop a
	// pod whose write failed, so the next pass tries it again.
	markedMu sync.Mutex
	marked   map[types.UID]markedAt
	// held says, per silent node, why the last pass did not mark its
	// pods, so the log and the node's Event say it once per change.
	held map[string]string
	// seen is when the Lease watch delivered each Lease's renewTime
	// (the controller's clock): the grace period runs from then, not
	// from the pass that reads it up to a monitor period later.
	seenMu sync.Mutex
	seen   map[string]seenRenewal
}

type seenRenewal struct {
	renew time.Time
	at    time.Time
}

type markedAt struct {
	reason string
	at     time.Time
}

// write is one mark for a writer: the patch, and what to say once it is
// written.
type write struct {
	pod    corev1.ObjectReference
	node   string
	reason string
	msg    string
	patch  string
}

type queued struct {
	key    types.NamespacedName
	node   string
	reason string
	renew  time.Time
}

// New returns a Monitor; it starts nothing.
func New(o Options) (*Monitor, error) {
	if o.Client == nil || o.Namespace == "" {
		return nil, errors.New("monitor: a client and the Lease namespace are required")
	}
	if err := o.Zones.Validate(); err != nil {
		return nil, err
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGracePeriod
	}
	if o.Renew <= 0 {
		o.Renew = probespec.LeaseRenewInterval
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	m := &Monitor{o: o, queue: map[string][]queued{}, marked: map[types.UID]markedAt{}, all: o.Informers,
		seen: map[string]seenRenewal{}}
	if m.all == nil {
		m.all, m.ownAll = informers.NewSharedInformerFactory(o.Client, 0), true
	}
	// The informers are registered now, before a shared factory is
	// started by another part: an index cannot be added to a running one.
	m.inNS = informers.NewSharedInformerFactoryWithOptions(o.Client, 0, informers.WithNamespace(o.Namespace))
	m.leases = m.inNS.Coordination().V1().Leases().Informer()
	if _, err := m.leases.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: m.leaseSeen, UpdateFunc: func(_, obj any) { m.leaseSeen(obj) }, DeleteFunc: m.leaseGone,
	}); err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	m.nodes = m.all.Core().V1().Nodes().Informer()
	m.pods = m.all.Core().V1().Pods().Informer()
	if err := m.pods.AddIndexers(cache.Indexers{byNode: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" && marking.Gated(p) {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	return m, nil
}

// Run watches and marks until ctx ends.
func (m *Monitor) Run(ctx context.Context) error {
	m.all.Start(ctx.Done())
	m.inNS.Start(ctx.Done())
	if m.ownAll {
		defer m.all.Shutdown()
	}
	defer m.inNS.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), m.leases.HasSynced, m.nodes.HasSynced, m.pods.HasSynced) {
		return nil
	}
	// The judgement starts now: every node gets the whole grace period.
	m.tracker = zones.NewTracker(m.o.Clock, m.o.Grace, m.o.Renew)
	m.lim = zones.NewLimiters(m.o.Clock)
	m.mon = zones.NewMonitor(m.o.Zones, m.tracker, m.lim)
	m.o.Log.Info("Monitoring probelet Leases", zap.String("namespace", m.o.Namespace), zap.Duration("grace", m.o.Grace))
	m.writes = workqueue.NewTyped[write]()
	var writers sync.WaitGroup
	defer func() {
		m.writes.ShutDown()
		writers.Wait()
	}()
	for range markWriters {
		writers.Go(func() {
			for m.writeNext(ctx) {
			}
		})
	}
	m.pass()
	judge := m.o.Clock.NewTicker(DefaultPeriod)
	defer judge.Stop()
	mark := m.o.Clock.NewTicker(markPeriod)
	defer mark.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-judge.C():
			m.pass()
		case <-mark.C():
			m.markQueued()
		}
	}
}

// pass observes the Leases, judges the nodes and queues the pods to mark.
func (m *Monitor) pass() {
	var nodes []zones.Node
	known := map[string]bool{}
	for _, obj := range m.nodes.GetStore().List() {
		if n, ok := obj.(*corev1.Node); ok {
			nodes = append(nodes, zones.Node{Name: n.Name, Zone: zoneKey(n), Ready: ready(n)})
			known[n.Name] = true
		}
	}
	m.tracker.Retain(func(name string) bool { return known[name] })
	// Only a node's Lease: the namespace also holds the leader's.
	now := m.o.Clock.Now()
	m.seenMu.Lock()
	for _, obj := range m.leases.GetStore().List() {
		if l, ok := obj.(*coordinationv1.Lease); ok && l.Spec.RenewTime != nil && known[l.Name] {
			at := now
			if s, ok := m.seen[l.Name]; ok && s.renew.Equal(l.Spec.RenewTime.Time) {
				at = s.at
			}
			m.tracker.ObserveLeaseAt(l.Name, l.Spec.RenewTime.Time, at)
		}
	}
	m.seenMu.Unlock()
	p := m.mon.Pass(nodes)
	for zone, s := range p.States {
		if m.o.OnState != nil {
			m.o.OnState(zoneLabel(zone), s)
		}
	}
	m.report(p)
	m.markedMu.Lock()
	for uid, mk := range m.marked {
		if m.o.Clock.Since(mk.at) >= echoWait {
			delete(m.marked, uid)
		}
	}
	m.markedMu.Unlock()
	m.queue = map[string][]queued{}
	for _, n := range p.Unavailable {
		m.enqueue(n, probespec.ReasonProbeletUnavailable)
	}
	for _, n := range p.NotRunning {
		m.enqueue(n, probespec.ReasonProbeletNotRunning)
	}
}

// leaseSeen notes when a Lease's renewTime arrived.
func (m *Monitor) leaseSeen(obj any) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok || l.Spec.RenewTime == nil {
		return
	}
	now := m.o.Clock.Now()
	m.seenMu.Lock()
	defer m.seenMu.Unlock()
	if s, ok := m.seen[l.Name]; !ok || !s.renew.Equal(l.Spec.RenewTime.Time) {
		m.seen[l.Name] = seenRenewal{renew: l.Spec.RenewTime.Time, at: now}
	}
}

// leaseGone forgets a deleted Lease's arrival.
func (m *Monitor) leaseGone(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if l, ok := obj.(*coordinationv1.Lease); ok {
		m.seenMu.Lock()
		delete(m.seen, l.Name)
		m.seenMu.Unlock()
	}
}

// report says, once per change, why the pods of silent probelets are not
// marked: in the log, and as a Warning Event on each such node (kubectl
// describe node shows it), so the holding back is never silent itself.
func (m *Monitor) report(p zones.Pass) {
	if p.Recovered {
		m.o.Log.Info("Some probelets renew again: leaving the disruption of every zone; every node gets the grace period again")
	}
	held := map[string]string{} // node → why its pods are not marked
	for _, n := range slices.Concat(p.Unavailable, p.NotRunning) {
		if why := holdReason(p, n.Zone); why != "" {
			held[n.Name] = why
		}
	}
	for name, why := range held {
		if m.held[name] == why {
			continue
		}
		m.o.Log.Warn("Holding back", zap.String("node", name), zap.String("why", why))
		if m.o.Recorder != nil {
			// The kubelet's node reference: kubectl describe node finds
			// Events whose UID is the node's name.
			ref := &corev1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}
			m.o.Recorder.Event(ref, corev1.EventTypeWarning, probespec.EventMarkingHeldBack, "pods not marked: "+why)
		}
	}
	m.held = held
}

// holdReason says why the zone's silent probelets' pods are not marked
// now, "" when they are.
func holdReason(p zones.Pass, zone string) string {
	c := p.Counts[zone]
	switch {
	case p.AllDisrupted:
		return fmt.Sprintf("every zone is fully disrupted (%d probelets silent, none renewing): a bad rollout or the control plane, not the apps; marking nothing until some probelet renews",
			len(p.Unavailable))
	case p.Rates[zone] > 0:
		return ""
	case p.States[zone] == zones.PartialDisruption:
		return fmt.Sprintf("zone %s is partially disrupted (%d of %d probelets silent) and has no more than --large-cluster-size-threshold nodes: marking nothing in it",
			zoneName(zone), c.Unhealthy, c.Size())
	}
	return fmt.Sprintf("the marking rate of zone %s is 0", zoneName(zone))
}

// zoneName spells a zone key for people.
func zoneName(zone string) string {
	if zone == "" {
		return "(unlabelled)"
	}
	return strconv.Quote(zoneLabel(zone))
}

// zoneLabel is a zone key as region/zone, "" for unlabelled nodes: the
// metric's label.
func zoneLabel(zone string) string {
	return strings.Trim(strings.ReplaceAll(zone, ":\x00:", "/"), "/")
}

// enqueue queues the gated pods of node n that need marking.
func (m *Monitor) enqueue(n zones.Node, reason string) {
	_, renew := m.tracker.Health(n.Name)
	objs, err := m.pods.GetIndexer().ByIndex(byNode, n.Name)
	if err != nil {
		return
	}
	for _, obj := range objs {
		p, ok := obj.(*corev1.Pod)
		if !ok || !m.needs(p, reason) {
			continue
		}
		m.queue[n.Zone] = append(m.queue[n.Zone], queued{key: types.NamespacedName{Namespace: p.Namespace, Name: p.Name},
			node: n.Name, reason: reason, renew: renew})
	}
}

// needs is marking.Needs, minus pods this monitor marked whose echo has
// not arrived yet.
func (m *Monitor) needs(p *corev1.Pod, reason string) bool {
	m.markedMu.Lock()
	defer m.markedMu.Unlock()
	if !marking.Needs(p, reason) {
		delete(m.marked, p.UID) // the echo
		return false
	}
	if mk, ok := m.marked[p.UID]; ok && mk.reason == reason && m.o.Clock.Since(mk.at) < echoWait {
		return false
	}
	return true
}

// markQueued marks each zone's queued pods as its limiter lets it.
func (m *Monitor) markQueued() {
	for zone, q := range m.queue {
		for len(q) > 0 && m.lim.TryAccept(zone) {
			m.mark(q[0])
			q = q[1:]
		}
		m.queue[zone] = q
	}
}

// mark hands the condition of one pod, if it still needs it, to the
// writers.
func (m *Monitor) mark(q queued) {
	obj, ok, err := m.pods.GetStore().GetByKey(q.key.Namespace + "/" + q.key.Name)
	if err != nil || !ok {
		return
	}
	pod := obj.(*corev1.Pod)
	if pod.Spec.NodeName != q.node || !m.needs(pod, q.reason) {
		return
	}
	if h, _ := m.tracker.Health(q.node); (q.reason == probespec.ReasonProbeletUnavailable && h != zones.Unavailable) ||
		(q.reason == probespec.ReasonProbeletNotRunning && h != zones.NotRunning) {
		return // its probelet came back since the pass
	}
	msg := marking.Message(q.reason, q.node, q.renew)
	patch, err := marking.Patch(pod, q.reason, msg, m.o.Clock.Now())
	if err != nil {
		return
	}
	m.markedMu.Lock()
	m.marked[pod.UID] = markedAt{reason: q.reason, at: m.o.Clock.Now()}
	m.markedMu.Unlock()
	ref := corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
	m.writes.Add(write{pod: ref, node: q.node, reason: q.reason, msg: msg, patch: string(patch)})
}

// writeNext writes one mark, within markTimeout; false once the queue is
// shut down.
func (m *Monitor) writeNext(ctx context.Context) bool {
	w, shutdown := m.writes.Get()
	if shutdown {
		return false
	}
	defer m.writes.Done(w)
	callCtx, cancel := context.WithTimeout(ctx, markTimeout)
	defer cancel()
	_, err := m.o.Client.CoreV1().Pods(w.pod.Namespace).Patch(callCtx, w.pod.Name, types.StrategicMergePatchType, []byte(w.patch),
		metav1.PatchOptions{FieldManager: "probelet-controller"}, "status")
	key := w.pod.Namespace + "/" + w.pod.Name
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return true // gone, or recreated (the UID precondition)
	case err != nil:
		m.markedMu.Lock()
		delete(m.marked, w.pod.UID)
		m.markedMu.Unlock()
		if ctx.Err() == nil {
			m.o.Log.Warn("Marking a pod failed; the next pass tries again", zap.String("pod", key), zap.Error(err))
		}
		return true
	}
	if m.o.OnMarked != nil {
		m.o.OnMarked(w.reason)
	}
	m.o.Log.Info("Marked a pod not Ready", zap.String("pod", key), zap.String("node", w.node), zap.String("reason", w.reason))
	if m.o.Recorder != nil {
		m.o.Recorder.Event(&w.pod, corev1.EventTypeWarning, w.reason, w.msg)
	}
	return true
}

// zoneKey is the node lifecycle controller's zone key: region and zone,
// "" when the node has neither label.
func zoneKey(n *corev1.Node) string {
	region, zone := n.Labels[corev1.LabelTopologyRegion], n.Labels[corev1.LabelTopologyZone]
	if region == "" && zone == "" {
		return ""
	}
	return region + ":\x00:" + zone
}

// ready is the Node's own Ready condition.
func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
