package webhook_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
	"github.com/probelet/probelet/probespec"
)

func namespace(name string, managed bool) *corev1.Namespace {
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if managed {
		n.Labels = map[string]string{probespec.LabelProbes: probespec.LabelManaged}
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
	managedLabel := map[string]string{probespec.LabelProbes: probespec.LabelManaged}
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
	tooLarge := podFrom(t, "web.json", "too-large", "shop", now, nil)
	tooLarge.Annotations = map[string]string{"example.com/blob": strings.Repeat("x", webhook.MaxObject)}
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
		tooLarge, // the webhook admits it unparsed, on purpose
		podFrom(t, "web.json", "opted-out", "shop", now, map[string]string{probespec.LabelProbes: probespec.LabelUnmanaged}), // keeps its probes on purpose
	}
	cs := fake.NewClientset(objs...)
	rec := record.NewFakeRecorder(100)
	var mu sync.Mutex
	missed := 0
	r := &webhook.Reporter{Client: cs, Recorder: rec, Exclude: []string{"kube-system", "probelet-system"},
		OnMissed: func() { mu.Lock(); missed++; mu.Unlock() }}
	ctx := runReporter(t, r)
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
	want := "Warning " + probespec.EventWebhookMissed + " created while the probelet webhook was unavailable; the kubelet runs its probes"
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

// labelledAt is a managed-fields entry of manager that owns the labels
// named, written at.
func labelledAt(manager string, at time.Time, labels ...string) metav1.ManagedFieldsEntry {
	owned := map[string]any{}
	for _, l := range labels {
		owned["f:"+l] = map[string]any{}
	}
	raw, _ := json.Marshal(map[string]any{"f:metadata": map[string]any{"f:labels": owned}})
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
		APIVersion: "v1", Time: &metav1.Time{Time: at}, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(raw))}
}

// TestReporterTellsNotAskedFromMissed: a pod created before the managed
// label (its namespace's, or its own) was last written was perhaps never
// sent to the webhook: it is reported as not asked, with the label's time,
// and not counted as missed; a pod created after it, or where nothing says
// when the label came, was missed.
func TestReporterTellsNotAskedFromMissed(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	created := now.Add(-10 * time.Minute)
	ns := func(name string, fields ...metav1.ManagedFieldsEntry) *corev1.Namespace {
		n := namespace(name, true)
		n.ManagedFields = fields
		return n
	}
	for _, tc := range []struct {
		name       string
		ns         *corev1.Namespace
		podLabel   bool
		podFields  []metav1.ManagedFieldsEntry
		wantReason string
		wantWords  string
	}{
		{"labelled before the pod", ns("a", labelledAt("kubectl-label", created.Add(-time.Hour), probespec.LabelProbes)), false, nil,
			probespec.EventWebhookMissed, "while the probelet webhook was unavailable"},
		{"labelled after the pod", ns("a", labelledAt("kubectl-label", created.Add(5*time.Minute), probespec.LabelProbes)), false, nil,
			probespec.EventWebhookNotAsked, "before namespace a was last labelled probelet.io/probes=managed (at " + created.Add(5*time.Minute).UTC().Format(time.RFC3339) + ")"},
		{"labelled in the pod's second", ns("a", labelledAt("kubectl-label", created, probespec.LabelProbes)), false, nil,
			probespec.EventWebhookMissed, "while the probelet webhook was unavailable"},
		{"another label written later", ns("a", labelledAt("kubectl-label", created.Add(-time.Hour), probespec.LabelProbes),
			labelledAt("ci", created.Add(time.Minute), "team")), false, nil,
			probespec.EventWebhookMissed, "while the probelet webhook was unavailable"},
		{"the latest owner counts", ns("a", labelledAt("first", created.Add(-time.Hour), probespec.LabelProbes),
			labelledAt("second", created.Add(time.Minute), probespec.LabelProbes, "team")), false, nil,
			probespec.EventWebhookNotAsked, "the API cannot tell apart"},
		{"no managed fields", ns("a"), false, nil, probespec.EventWebhookMissed, "while the probelet webhook was unavailable"},
		{"the pod labelled after it was created", namespace("a", false), true,
			[]metav1.ManagedFieldsEntry{labelledAt("kubectl-label", created.Add(time.Minute), probespec.LabelProbes)},
			probespec.EventWebhookNotAsked, "before the pod was last labelled"},
		{"the pod created with its label", namespace("a", false), true,
			[]metav1.ManagedFieldsEntry{labelledAt("kubectl-create", created, probespec.LabelProbes)},
			probespec.EventWebhookMissed, "while the probelet webhook was unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var labels map[string]string
			if tc.podLabel {
				labels = map[string]string{probespec.LabelProbes: probespec.LabelManaged}
			}
			pod := podFrom(t, "web.json", "p", "a", created, labels)
			pod.ManagedFields = tc.podFields
			// Listed, not created: the fake's create would write managed
			// fields of its own, at its own time.
			cs := fake.NewClientset(tc.ns, pod)
			rec := record.NewFakeRecorder(10)
			var missed, notAsked atomic.Int32
			r := &webhook.Reporter{Client: cs, Recorder: rec, OnMissed: func() { missed.Add(1) }, OnNotAsked: func() { notAsked.Add(1) }}
			runReporter(t, r)
			var ev string
			testutil.WaitFor(t, "the pod's Event", func() bool {
				select {
				case ev = <-rec.Events:
					return true
				default:
					return false
				}
			})
			if !strings.HasPrefix(ev, "Warning "+tc.wantReason+" ") || !strings.Contains(ev, tc.wantWords) {
				t.Errorf("Event %q, want %s saying %q", ev, tc.wantReason, tc.wantWords)
			}
			wantMissed := tc.wantReason == probespec.EventWebhookMissed
			if got := missed.Load() == 1; got != wantMissed || notAsked.Load()+missed.Load() != 1 {
				t.Errorf("OnMissed %d, OnNotAsked %d; want one %s", missed.Load(), notAsked.Load(), tc.wantReason)
			}
		})
	}
}

// runReporter runs r until the test ends and returns the context it runs
// under.
func runReporter(t *testing.T, r *webhook.Reporter) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return ctx
}
