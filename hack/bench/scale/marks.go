//go:build linux

package main

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/probelet/probelet/probespec"
)

// mark is one pod seen turning marked by probelet-controller.
type mark struct {
	node, zone string
	at         time.Time
}

// markWatch watches the gated pods and records when each turns marked
// (probelet.io/ready False for a silent probelet), as the watch delivers it.
type markWatch struct {
	mu     sync.Mutex
	marked map[string]bool // pod key → marked now
	marks  []mark
}

func watchMarks(ctx context.Context, admin kubernetes.Interface) (*markWatch, error) {
	w := &markWatch{marked: map[string]bool{}}
	f := informers.NewSharedInformerFactoryWithOptions(admin, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=scale" }),
		informers.WithTransform(func(obj any) (any, error) {
			if p, ok := obj.(*corev1.Pod); ok {
				// Only what is read: the labels and probelet's condition.
				slim := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels,
					ResourceVersion: p.ResourceVersion}}
				for _, c := range p.Status.Conditions {
					if c.Type == probespec.ConditionReady {
						slim.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status, Reason: c.Reason}}
					}
				}
				return slim, nil
			}
			return obj, nil
		}))
	inf := f.Core().V1().Pods().Informer()
	observe := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		now := time.Now()
		key := p.Namespace + "/" + p.Name
		m := marked(p)
		w.mu.Lock()
		defer w.mu.Unlock()
		if m && !w.marked[key] {
			w.marks = append(w.marks, mark{node: p.Labels[labelNode], zone: p.Labels[labelZone], at: now})
		}
		w.marked[key] = m
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: observe,
		UpdateFunc: func(_, obj any) { observe(obj) }}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, ctx.Err()
	}
	w.mu.Lock()
	w.marks = nil // the list's marks are not news
	w.mu.Unlock()
	return w, nil
}

// marked reports whether probelet-controller's mark is on p.
func marked(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == probespec.ConditionReady {
			return c.Status == corev1.ConditionFalse &&
				(c.Reason == probespec.ReasonProbeletUnavailable || c.Reason == probespec.ReasonProbeletNotRunning)
		}
	}
	return false
}

// since returns the marks seen at or after t.
func (w *markWatch) since(t time.Time) []mark {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []mark
	for _, m := range w.marks {
		if !m.at.Before(t) {
			out = append(out, m)
		}
	}
	return out
}

// firstMarks returns, per node of nodes, when each of its pods turned
// marked at or after from.
func (w *markWatch) firstMarks(nodes map[string]time.Time, from time.Time) map[string][]time.Time {
	out := map[string][]time.Time{}
	for _, m := range w.since(from) {
		if _, ok := nodes[m.node]; ok {
			out[m.node] = append(out[m.node], m.at)
		}
	}
	return out
}
