package webhook_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/probelet/probelet/controller/webhook"
	"github.com/probelet/probelet/internal/testutil"
)

func namespace(name string, managed bool) *corev1.Namespace {
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if managed {
		n.Labels = map[string]string{webhook.Label: webhook.LabelManaged}
	}
	return n
}

// podFrom is a fixture as a Pod object in namespace ns, created at.
func podFrom(t *testing.T, file, name, ns string, at time.Time, labels map[string]string) *corev1.Pod {
	t.Helper()
	var p corev1.Pod
	if err := json.Unmarshal(fixture(t, file), &p); err != nil {
		t.Fatal(err)
	}
	p.Name, p.Namespace, p.UID, p.Labels = name, ns, types.UID("uid-"+name), labels
	p.CreationTimestamp = metav1.NewTime(at)
	return &p
}

// TestReporterFindsPodsTheWebhookMissed: only pods of managed namespaces
// (or labelled managed themselves), created recently, with probes the
// webhook would have moved, are reported, once each.
func TestReporterFindsPodsTheWebhookMissed(t *testing.T) {
	now := time.Now()
	managedLabel := map[string]string{webhook.Label: webhook.LabelManaged}
	converted := podFrom(t, "web.json", "converted", "shop", now, nil)
	d, err := webhook.Mutate(fixture(t, "web.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(converted)
	var conv corev1.Pod
	if err := json.Unmarshal(apply(t, raw, d), &conv); err != nil {
		t.Fatal(err)
	}
	objs := []runtime.Object{
		namespace("shop", true), namespace("lab", false), namespace("kube-system", true),
		podFrom(t, "web.json", "missed", "shop", now, nil),               // reported
		podFrom(t, "web.json", "self-managed", "lab", now, managedLabel), // reported: the pod's own label
		&conv, // converted by the webhook
		podFrom(t, "web.json", "unmanaged", "lab", now, nil),              // its namespace is not managed
		podFrom(t, "foreign-host.json", "refused", "shop", now, nil),      // the webhook refused it
		podFrom(t, "no-probes.json", "plain", "shop", now, nil),           // nothing to move
		podFrom(t, "web.json", "system", "kube-system", now, nil),         // excluded
		podFrom(t, "web.json", "old", "shop", now.Add(-2*time.Hour), nil), // before the leader's window
	}
	cs := fake.NewClientset(objs...)
	rec := record.NewFakeRecorder(100)
	var mu sync.Mutex
	missed := 0
	r := &webhook.Reporter{Client: cs, Recorder: rec, Exclude: []string{"kube-system", "probelet-system"},
		OnMissed: func() { mu.Lock(); missed++; mu.Unlock() }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	// A pod created now arrives after the initial listing: once it is
	// reported, every listed pod has been judged.
	testutil.WaitFor(t, "the reporter's informers", func() bool { return len(cs.Actions()) >= 4 })
	last := podFrom(t, "web.json", "sentinel", "shop", now, nil)
	if _, err := cs.CoreV1().Pods("shop").Create(ctx, last, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var events []string
	testutil.WaitFor(t, "the sentinel's Event", func() bool {
		select {
		case ev := <-rec.Events:
			events = append(events, ev)
		default:
		}
		return len(events) == 3
	})
	want := "Warning " + webhook.ReasonMissed + " created while the probelet webhook was unavailable; the kubelet runs its probes"
	if slices.ContainsFunc(events, func(e string) bool { return e != want }) {
		t.Fatalf("events %q, want three %q", events, want)
	}
	// A pod created later is reported too; OnMissed counts each once.
	if _, err := cs.CoreV1().Pods("shop").Create(ctx, podFrom(t, "web.json", "second", "shop", now, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the second pod's Event", func() bool { return len(rec.Events) == 1 })
	mu.Lock()
	defer mu.Unlock()
	if missed != 4 {
		t.Fatalf("OnMissed %d times, want 4 (missed, self-managed, sentinel, second)", missed)
	}
}
