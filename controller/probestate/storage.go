package probestate

import (
	"context"
	"fmt"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/probelet/probelet/api/probes/convert"
	probes "github.com/probelet/probelet/api/probes/v1alpha1"
	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/probespec"
)

// nodesAtOnce bounds the nodes one list asks at the same time.
const nodesAtOnce = 32

// NodeSource is where a read's answers come from (*Fetcher).
type NodeSource interface {
	Fetch(ctx context.Context, node, namespace string, names []string) ([]*apiv1.WhyResponse, probes.Source)
}

// Storage is the podprobes resource: get and list, from the pods the
// informer holds and the answers of their nodes.
type Storage struct {
	pods  corelisters.PodLister
	nodes NodeSource
}

var (
	_ rest.Storage              = (*Storage)(nil)
	_ rest.Getter               = (*Storage)(nil)
	_ rest.Lister               = (*Storage)(nil)
	_ rest.Scoper               = (*Storage)(nil)
	_ rest.SingularNameProvider = (*Storage)(nil)
)

// NewStorage returns the resource over pods and nodes.
func NewStorage(pods corelisters.PodLister, nodes NodeSource) *Storage {
	return &Storage{pods: pods, nodes: nodes}
}

func (*Storage) New() runtime.Object     { return &probes.PodProbes{} }
func (*Storage) NewList() runtime.Object { return &probes.PodProbesList{} }
func (*Storage) Destroy()                {}
func (*Storage) NamespaceScoped() bool   { return true }
func (*Storage) GetSingularName() string { return probespec.StateResource }
func (*Storage) ShortNames() []string    { return []string{"pp"} }
func (*Storage) Categories() []string    { return []string{"probelet"} }

// Get answers for one pod of the request's namespace.
func (s *Storage) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	ns, ok := genericapirequest.NamespaceFrom(ctx)
	if !ok || ns == "" {
		return nil, apierrors.NewBadRequest("podprobes are read in a namespace")
	}
	pod, err := s.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(probes.Resource.GroupResource(), name)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	answers, src := s.fetch(ctx, pod.Spec.NodeName, ns, []string{name})
	out := podProbes(pod, src, answers)
	return &out, nil
}

// List answers for the pods of the request's namespace (or every one)
// that its label and field selectors (metadata.name, metadata.namespace,
// spec.nodeName) choose, asking each of their nodes once.
func (s *Storage) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	sel, fsel := labels.Everything(), fields.Everything()
	if options != nil && options.LabelSelector != nil {
		sel = options.LabelSelector
	}
	if options != nil && options.FieldSelector != nil {
		fsel = options.FieldSelector
	}
	var pods []*corev1.Pod
	var err error
	if ns == "" {
		pods, err = s.pods.List(sel)
	} else {
		pods, err = s.pods.Pods(ns).List(sel)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if !fsel.Matches(fields.Set{"metadata.name": p.Name, "metadata.namespace": p.Namespace, "spec.nodeName": p.Spec.NodeName}) {
			continue
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	type nodeAnswer struct {
		answers []*apiv1.WhyResponse
		src     probes.Source
	}
	got := make(map[string]nodeAnswer, len(byNode))
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, nodesAtOnce)
	for node, nodePods := range byNode {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			var names []string
			if len(nodePods) == 1 {
				names = []string{nodePods[0].Name} // one pod: only its containers cross the wire
			}
			a, src := s.fetch(ctx, node, ns, names)
			mu.Lock()
			got[node] = nodeAnswer{a, src}
			mu.Unlock()
		})
	}
	wg.Wait()
	list := &probes.PodProbesList{Items: []probes.PodProbes{}}
	for node, nodePods := range byNode {
		for _, p := range nodePods {
			list.Items = append(list.Items, podProbes(p, got[node].src, got[node].answers))
		}
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return list, nil
}

// fetch asks node, unless the pods have none yet.
func (s *Storage) fetch(ctx context.Context, node, ns string, names []string) ([]*apiv1.WhyResponse, probes.Source) {
	if node == "" {
		return nil, probes.Source{Reason: ReasonNotScheduled, Message: "the pod is not bound to a node yet",
			ObservedTime: metav1.Now()}
	}
	return s.nodes.Fetch(ctx, node, ns, names)
}

// podProbes is the pod's PodProbes from its node's answers (the node's
// containers of every pod asked).
func podProbes(pod *corev1.Pod, src probes.Source, answers []*apiv1.WhyResponse) probes.PodProbes {
	out := probes.PodProbes{
		TypeMeta: metav1.TypeMeta{APIVersion: probes.SchemeGroupVersion.String(), Kind: "PodProbes"},
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, Labels: pod.Labels,
			CreationTimestamp: pod.CreationTimestamp},
		NodeName: pod.Spec.NodeName, Source: src,
	}
	for _, w := range answers {
		c := w.GetContainer()
		if c.GetPodNamespace() != pod.Namespace || c.GetPodName() != pod.Name {
			continue
		}
		if uid := c.GetPodUid(); uid != "" && pod.UID != "" && uid != string(pod.UID) {
			continue // an earlier pod of the same name
		}
		out.Containers = append(out.Containers, convert.Container(w))
	}
	if src.Answered && len(out.Containers) == 0 && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		out.Source.Message = fmt.Sprintf("probelet on node %s knows no container of this pod yet", pod.Spec.NodeName)
	}
	return out
}
