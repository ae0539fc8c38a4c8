package probestate_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	probes "github.com/probelet/probelet/api/probes/v1alpha1"
	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/controller/probestate"
)

// nodes answers for each node what its pods are, and counts the asks.
type nodes struct {
	mu    sync.Mutex
	asked map[string]int
	down  map[string]string // node -> reason
	slow  map[string]time.Duration
	pods  []*corev1.Pod
}

func (n *nodes) Fetch(ctx context.Context, node, namespace string, names []string) ([]*apiv1.WhyResponse, probes.Source) {
	n.mu.Lock()
	n.asked[node]++
	n.mu.Unlock()
	if d := n.slow[node]; d > 0 {
		time.Sleep(d)
	}
	if r := n.down[node]; r != "" {
		return nil, probes.Source{Reason: r, Message: "node " + node + " is " + r}
	}
	var out []*apiv1.WhyResponse
	for _, p := range n.pods {
		if p.Spec.NodeName != node || (namespace != "" && p.Namespace != namespace) || (len(names) > 0 && !slices.Contains(names, p.Name)) {
			continue
		}
		out = append(out, &apiv1.WhyResponse{Container: &apiv1.Container{PodNamespace: p.Namespace, PodName: p.Name, PodUid: string(p.UID),
			ContainerName: "app", Ready: true, Probes: []*apiv1.Probe{{Type: apiv1.ProbeType_PROBE_TYPE_READINESS, Result: apiv1.Result_RESULT_SUCCESS}}}})
	}
	// An earlier pod of the same name, which must not be mixed in.
	out = append(out, &apiv1.WhyResponse{Container: &apiv1.Container{PodNamespace: "a", PodName: "web-1", PodUid: "old", ContainerName: "stale"}})
	return out, probes.Source{Answered: true}
}

func pod(ns, name, node string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name), Labels: lbls}, Spec: corev1.PodSpec{NodeName: node}}
}

func newStorage(t *testing.T, n *nodes) *probestate.Storage {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range n.pods {
		_ = idx.Add(p)
	}
	return probestate.NewStorage(corelisters.NewPodLister(idx), n)
}

func fixture() *nodes {
	return &nodes{asked: map[string]int{}, down: map[string]string{"n3": probestate.ReasonTimeout}, slow: map[string]time.Duration{},
		pods: []*corev1.Pod{
			pod("a", "web-1", "n1", map[string]string{"app": "web"}), pod("a", "web-2", "n2", map[string]string{"app": "web"}),
			pod("a", "db", "n1", map[string]string{"app": "db"}), pod("a", "lost", "n3", nil), pod("a", "pending", "", nil),
			pod("b", "web-1", "n1", map[string]string{"app": "web"}),
		}}
}

func inNamespace(ns string) context.Context {
	return genericapirequest.WithNamespace(context.Background(), ns)
}

func TestGet(t *testing.T) {
	n := fixture()
	s := newStorage(t, n)
	obj, err := s.Get(inNamespace("a"), "web-1", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := obj.(*probes.PodProbes)
	if p.Name != "web-1" || p.Namespace != "a" || p.NodeName != "n1" || !p.Source.Answered || len(p.Containers) != 1 || p.Containers[0].Name != "app" ||
		p.Containers[0].Probes[0].Type != "Readiness" || p.Labels["app"] != "web" {
		t.Fatalf("got %+v", p)
	}
	for _, tc := range []struct{ ns, name, reason string }{
		{"a", "lost", probestate.ReasonTimeout}, {"a", "pending", probestate.ReasonNotScheduled},
	} {
		obj, err := s.Get(inNamespace(tc.ns), tc.name, &metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p := obj.(*probes.PodProbes); p.Source.Answered || p.Source.Reason != tc.reason || len(p.Containers) != 0 {
			t.Errorf("%s: %+v, want the node's reason %q", tc.name, p.Source, tc.reason)
		}
	}
	if _, err := s.Get(inNamespace("b"), "db", &metav1.GetOptions{}); !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "podprobes") {
		t.Fatalf("a pod of another namespace: %v, want NotFound", err)
	}
}

func TestList(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ns     string
		labels string
		fields string
		want   []string
	}{
		{"a namespace", "a", "", "", []string{"a/db", "a/lost", "a/pending", "a/web-1", "a/web-2"}},
		{"every namespace", "", "", "", []string{"a/db", "a/lost", "a/pending", "a/web-1", "a/web-2", "b/web-1"}},
		{"by label", "a", "app=web", "", []string{"a/web-1", "a/web-2"}},
		{"by node", "", "", "spec.nodeName=n1", []string{"a/db", "a/web-1", "b/web-1"}},
		{"by name", "a", "", "metadata.name=db", []string{"a/db"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := fixture()
			s := newStorage(t, n)
			opts := &metainternalversion.ListOptions{LabelSelector: labels.Everything(), FieldSelector: fields.Everything()}
			if tc.labels != "" {
				opts.LabelSelector, _ = labels.Parse(tc.labels)
			}
			if tc.fields != "" {
				opts.FieldSelector, _ = fields.ParseSelector(tc.fields)
			}
			obj, err := s.List(inNamespace(tc.ns), opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range obj.(*probes.PodProbesList).Items {
				got = append(got, p.Namespace+"/"+p.Name)
				if p.Source.Answered && p.Name == "web-1" && len(p.Containers) != 1 {
					t.Errorf("%s/%s: %d containers, want its own only", p.Namespace, p.Name, len(p.Containers))
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for node, asked := range n.asked {
				if asked != 1 || node == "" {
					t.Errorf("node %q asked %d times, want once per list", node, asked)
				}
			}
		})
	}
}

// TestASlowNodeDelaysOnlyItself: nodes are asked at once, so a list takes
// about the slowest node's time, not the sum.
func TestASlowNodeDelaysOnlyItself(t *testing.T) {
	n := fixture()
	n.slow = map[string]time.Duration{"n1": 300 * time.Millisecond, "n2": 300 * time.Millisecond, "n3": 300 * time.Millisecond}
	s := newStorage(t, n)
	start := time.Now()
	if _, err := s.List(inNamespace(""), &metainternalversion.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= 900*time.Millisecond {
		t.Fatalf("a list over three nodes of 300 ms each took %s: the nodes were asked one after another", took)
	}
}

// TestTheTableEscapesWhatPodsWrite: kubectl prints cells as they are.
func TestTheTableEscapesWhatPodsWrite(t *testing.T) {
	s := newStorage(t, fixture())
	p := &probes.PodProbes{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Source: probes.Source{Answered: true},
		Containers: []probes.ContainerProbes{{Name: "app", Probes: []probes.Probe{{Type: "Liveness", Result: "Failure", Consecutive: 2,
			LastOutput: "\x1b]52;c;aGk=\x07boom\x1b[2J"}}}}}
	table, err := s.ConvertToTable(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range table.Rows[0].Cells {
		if s, ok := c.(string); ok && strings.ContainsAny(s, "\x1b\x07") {
			t.Fatalf("cell %q carries control characters", s)
		}
	}
	if got := table.Rows[0].Cells[2]; got != "app/liveness 2/0" {
		t.Errorf("failing cell %q", got)
	}
	if got := table.Rows[0].Cells[7]; got != `\x1b]52;c;aGk=\x07boom\x1b[2J` {
		t.Errorf("last output cell %q", got)
	}
}
