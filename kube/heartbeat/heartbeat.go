// Package heartbeat keeps probelet's node Lease: a coordination.k8s.io/v1
// Lease named after the node, renewed every renew interval (10 s by default) while probelet is
// really probing — NRI connected and the probe scheduler going round — so
// that probelet-controller can tell a node whose probelet went silent, as
// the node lifecycle controller tells a node whose kubelet did from the
// kubelet's Lease in kube-node-lease.
//
// It is a small loop of its own rather than client-go's
// k8s.io/component-helpers/apimachinery/lease controller, which the kubelet
// uses: that controller takes a full clientset (which the agent does not
// link: kube.Client says why), renews unconditionally (its only hook fails
// the renewal as an error, retried five times a round and logged through
// klog), and its create back-off sleeps on the real clock. The rules are
// the same: one Lease per node, the holder the node, the Node its owner so
// it goes with the node, the last written Lease updated without a read
// first, a read only after a conflict.
package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/probelet/probelet/kube"
	"github.com/probelet/probelet/probespec"
)

const (
	// leaseRenewals is the Lease's leaseDurationSeconds in renewals: four
	// missed ones (40 s at the default).
	leaseRenewals = 4
	// DefaultStallAfter is how far behind its due round the probe
	// scheduler may be before probelet counts as not probing, at the
	// default renew interval (it is the renew interval). A round is
	// milliseconds of work; one a whole renew interval late is a wedged
	// engine, not a busy node.
	DefaultStallAfter = probespec.LeaseRenewInterval
	// retryMin is the first wait after a failed renewal; it doubles up to
	// the renew interval, so an API server that is away is asked at most every
	// renew interval, and one that is back is renewed within seconds.
	retryMin = 500 * time.Millisecond
	// recheckInterval is how often a heartbeat that is not renewing looks
	// again: it reads two numbers, and probelet that probes again (NRI
	// back, or just started) renews within a second rather than a renew
	// interval, so its pods' conditions are its own again promptly.
	recheckInterval = time.Second
	// maxReason bounds probespec.AnnotationTCPModeReason the annotation: a verifier's words can run long.
	maxReason = 1024
)

// TCPMode says how TCP probes are answered: the mode in force ("ebpf",
// "dial", or "" while it is not known yet) and why it is not the one asked
// for ("" when it is).
type TCPMode func() (mode, reason string)

// Runtime is the NRI connection as the heartbeat sees it.
type Runtime interface {
	// Connected reports whether probelet is registered with the runtime.
	Connected() bool
}

// Scheduler is the probe engine as the heartbeat sees it
// (prober.Manager).
type Scheduler interface {
	// SchedulerLag reports how far the scheduler is behind its next
	// round, and whether it runs at all. It must not block on the engine.
	SchedulerLag() (lag time.Duration, running bool)
}

// Options are the Heartbeat's inputs.
type Options struct {
	Client    kube.Client
	NodeName  string
	Namespace string // default probespec.LeaseNamespace
	Runtime   Runtime
	Scheduler Scheduler
	// RenewInterval is how often the Lease is renewed (default
	// probespec.LeaseRenewInterval); the Lease says four of them as its duration.
	RenewInterval time.Duration
	// StallAfter is the scheduler lag past which probelet does not
	// renew (default: the renew interval).
	StallAfter time.Duration
	Clock      clock.WithTicker // default real
	Log        *zap.Logger
	// OnResumed is called after a renewal that ends a hold (Holding was
	// not ""): the readiness writer rewrites the conditions it left to
	// probelet-controller meanwhile.
	OnResumed func()
	// TCPMode, when set, is written into the Lease at each renewal
	// (LabelTCPMode, AnnotationTCPModeReason).
	TCPMode TCPMode
	// StateEndpoint and StateCertSHA256 say where this node serves its
	// probe state and which certificate it serves there
	// (AnnotationStateEndpoint, AnnotationStateCertSHA256); empty: it
	// does not, and the annotations are removed.
	StateEndpoint, StateCertSHA256 string
}

// Heartbeat renews the node's Lease. Run it once.
type Heartbeat struct {
	client     kube.Client
	node, ns   string
	runtime    Runtime
	scheduler  Scheduler
	every      time.Duration
	stallAfter time.Duration
	clock      clock.WithTicker
	log        *zap.Logger
	onResumed  func()
	tcpMode    TCPMode
	stateAt    string
	statePin   string

	// latest is the Lease as last written: the next renewal updates it
	// without reading it first. Only Run's goroutine touches it.
	latest *coordinationv1.Lease
	// holding is why the last beat did not renew ("" when it did, or
	// before the first beat), so the log says so once per change.
	holding string
	// held is holding for other goroutines (Holding).
	held atomic.Pointer[string]
}

// New returns a Heartbeat. It starts nothing: Run does.
func New(o Options) (*Heartbeat, error) {
	if o.Client == nil || o.Runtime == nil || o.Scheduler == nil || o.NodeName == "" {
		return nil, errors.New("heartbeat: a client, the node name, the NRI plugin and the probe engine are required")
	}
	h := &Heartbeat{client: o.Client, node: o.NodeName, ns: o.Namespace, runtime: o.Runtime,
		scheduler: o.Scheduler, every: o.RenewInterval, stallAfter: o.StallAfter, clock: o.Clock, log: o.Log, onResumed: o.OnResumed,
		tcpMode: o.TCPMode, stateAt: o.StateEndpoint, statePin: o.StateCertSHA256}
	if h.ns == "" {
		h.ns = probespec.LeaseNamespace
	}
	if h.every <= 0 {
		h.every = probespec.LeaseRenewInterval
	}
	if h.stallAfter <= 0 {
		h.stallAfter = h.every
	}
	if h.clock == nil {
		h.clock = clock.RealClock{}
	}
	if h.log == nil {
		h.log = zap.NewNop()
	}
	return h, nil
}

// Run renews the Lease until ctx ends: at once, then every renew interval
// while probelet probes; a failed renewal is retried sooner, backing off
// to the renew interval. It does not delete the Lease on the way out: a
// restart within the grace period must look like no silence at all.
func (h *Heartbeat) Run(ctx context.Context) error {
	h.log.Info("Renewing the node Lease while probing", zap.String("lease", h.ns+"/"+h.node),
		zap.Duration("every", h.every), zap.Int32("durationSeconds", h.leaseSeconds()))
	retry := retryMin
	timer := h.clock.NewTimer(h.beat(ctx, &retry))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C():
		}
		timer.Reset(h.beat(ctx, &retry))
	}
}

// beat renews the Lease if probelet is probing and returns the wait until
// the next beat.
func (h *Heartbeat) beat(ctx context.Context, retry *time.Duration) time.Duration {
	if why := h.notProbing(); why != "" {
		switch {
		case why == h.holding:
		case h.latest == nil && h.holding == "":
			// At start NRI usually connects a moment after this beat.
			h.log.Info("Renewing the node Lease once probelet probes", zap.String("reason", why))
		default:
			h.log.Warn("Not renewing the node Lease: probelet is not probing", zap.String("reason", why))
		}
		h.hold(why)
		return recheckInterval
	}
	if err := h.renew(ctx); err != nil {
		if ctx.Err() != nil {
			return h.every
		}
		wait := *retry
		*retry = min(2**retry, h.every)
		h.log.Warn("Renewing the node Lease failed; retrying", zap.Error(err), zap.Duration("in", wait))
		return wait
	}
	resumed := h.holding != ""
	if resumed {
		h.log.Info("Renewing the node Lease again: probelet is probing")
	}
	h.hold("")
	if resumed && h.onResumed != nil {
		h.onResumed()
	}
	*retry = retryMin
	return h.every
}

// leaseSeconds is the Lease's leaseDurationSeconds: four renewals.
func (h *Heartbeat) leaseSeconds() int32 {
	return int32((leaseRenewals*h.every + time.Second - 1) / time.Second)
}

func (h *Heartbeat) hold(why string) {
	h.holding = why
	h.held.Store(&why)
}

// Holding says why the last beat did not renew the Lease, "" when it
// renewed or has not decided yet. While it holds, probelet-controller may
// mark this node's pods (after its grace period) and the readiness writer
// leaves those marks alone: two writers taking turns on one condition
// would flap it. Safe from any goroutine.
func (h *Heartbeat) Holding() string {
	if why := h.held.Load(); why != nil {
		return *why
	}
	return ""
}

// notProbing says why probelet is not really probing, "" when it is.
func (h *Heartbeat) notProbing() string {
	if !h.runtime.Connected() {
		return "NRI is not connected"
	}
	lag, running := h.scheduler.SchedulerLag()
	switch {
	case !running:
		return "the probe scheduler is not running"
	case lag > h.stallAfter:
		return fmt.Sprintf("the probe scheduler is %s behind", lag.Truncate(time.Second))
	}
	return ""
}

// renew writes a fresh renewTime: into the Lease as last written, else as
// read, else into a new Lease.
func (h *Heartbeat) renew(ctx context.Context) error {
	if h.latest != nil {
		err := h.update(ctx, h.latest)
		if err == nil || !(apierrors.IsConflict(err) || apierrors.IsNotFound(err)) {
			return err
		}
		// Someone else wrote it, or it went (its Node did): read again.
		h.latest = nil
	}
	lease, err := h.client.GetLease(ctx, h.ns, h.node)
	switch {
	case apierrors.IsNotFound(err):
		return h.create(ctx)
	case err != nil:
		return fmt.Errorf("get Lease %s/%s: %w", h.ns, h.node, err)
	}
	return h.update(ctx, lease)
}

func (h *Heartbeat) update(ctx context.Context, base *coordinationv1.Lease) error {
	lease := base.DeepCopy()
	if !ownedBy(lease) {
		node, err := h.client.GetNode(ctx, h.node)
		if err != nil {
			return fmt.Errorf("get Node %s, the Lease's owner: %w", h.node, err)
		}
		lease.OwnerReferences = append(lease.OwnerReferences, ownerRef(node))
	}
	h.fill(lease)
	out, err := h.client.UpdateLease(ctx, lease)
	if err != nil {
		return fmt.Errorf("update Lease %s/%s: %w", h.ns, h.node, err)
	}
	h.latest = out
	return nil
}

// create makes the Lease, owned by the Node: a node that is not
// registered yet gets no Lease (the garbage collector would delete one
// whose owner does not exist), and the next beat tries again.
func (h *Heartbeat) create(ctx context.Context) error {
	node, err := h.client.GetNode(ctx, h.node)
	if err != nil {
		return fmt.Errorf("get Node %s, the Lease's owner: %w", h.node, err)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name: h.node, Namespace: h.ns, OwnerReferences: []metav1.OwnerReference{ownerRef(node)},
	}}
	h.fill(lease)
	out, err := h.client.CreateLease(ctx, lease)
	if err != nil {
		return fmt.Errorf("create Lease %s/%s: %w", h.ns, h.node, err)
	}
	h.latest = out
	return nil
}

// fill asserts the Lease's spec and how TCP probes are answered, and
// stamps it now. The renewal carries them: no write of their own.
func (h *Heartbeat) fill(lease *coordinationv1.Lease) {
	lease.Spec.HolderIdentity = ptr.To(h.node)
	lease.Spec.LeaseDurationSeconds = ptr.To(h.leaseSeconds())
	lease.Spec.RenewTime = &metav1.MicroTime{Time: h.clock.Now()}
	setOrDelete(&lease.Annotations, probespec.AnnotationStateEndpoint, h.stateAt)
	setOrDelete(&lease.Annotations, probespec.AnnotationStateCertSHA256, h.statePin)
	if h.tcpMode != nil {
		mode, reason := h.tcpMode()
		setOrDelete(&lease.Labels, probespec.LabelTCPMode, mode)
		if len(reason) > maxReason {
			reason = strings.ToValidUTF8(reason[:maxReason-len("…")], "") + "…"
		}
		setOrDelete(&lease.Annotations, probespec.AnnotationTCPModeReason, reason)
	}
}

// setOrDelete sets key to value in *m, or removes it when value is "".
func setOrDelete(m *map[string]string, key, value string) {
	if value == "" {
		delete(*m, key)
		return
	}
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[key] = value
}

// ownerRef makes node the owner, as the kubelet does for its own Lease.
func ownerRef(node *corev1.Node) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}
}

// ownedBy reports whether lease has a Node owner.
func ownedBy(lease *coordinationv1.Lease) bool {
	for _, r := range lease.OwnerReferences {
		if r.APIVersion == "v1" && r.Kind == "Node" {
			return true
		}
	}
	return false
}
