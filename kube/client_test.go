package kube_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/kube"
)

// request is what the fake API server saw.
type request struct {
	method, path, contentType, body string
	query                           url.Values
}

// TestClientSpeaksTheAPI checks each call of the narrow client against the
// request the clientset makes for it, and that it decodes the answer.
func TestClientSpeaksTheAPI(t *testing.T) {
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
	event := &corev1.Event{TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "web.1", Namespace: "default"}, Reason: "Unhealthy"}
	pods := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []corev1.Pod{*pod}}
	budgets := &policyv1.PodDisruptionBudgetList{TypeMeta: metav1.TypeMeta{Kind: "PodDisruptionBudgetList", APIVersion: "policy/v1"},
		Items: []policyv1.PodDisruptionBudget{{ObjectMeta: metav1.ObjectMeta{Name: "web-pdb", Namespace: "default"}}}}
	watchEvent := map[string]any{"type": "ADDED", "object": pod}
	node := &corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "n-uid"}}
	lease := &coordinationv1.Lease{TypeMeta: metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "probelet-system", ResourceVersion: "3"}}

	for _, tc := range []struct {
		name  string
		reply any
		call  func(context.Context, kube.Client) (runtime.Object, error)
		want  request
		check func(*testing.T, runtime.Object)
	}{{
		name: "list the node's pods", reply: pods,
		call: func(ctx context.Context, c kube.Client) (runtime.Object, error) {
			return cache.ToListerWatcherWithContext(c.NodePods("n1")).ListWithContext(ctx, metav1.ListOptions{})
		},
		want:  request{method: "GET", path: "/api/v1/pods", query: url.Values{"fieldSelector": {"spec.nodeName=n1"}}},
		check: func(t *testing.T, o runtime.Object) { wantName(t, o.(*corev1.PodList).Items[0].Name, "web") },
	}, {
		name: "watch the node's pods", reply: watchEvent,
		call: func(ctx context.Context, c kube.Client) (runtime.Object, error) {
			w, err := cache.ToListerWatcherWithContext(c.NodePods("n1")).WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "7"})
			if err != nil {
				return nil, err
			}
			defer w.Stop()
			ev := <-w.ResultChan()
			if ev.Type != watch.Added {
				t.Errorf("watch event %s, want ADDED", ev.Type)
			}
			return ev.Object, nil
		},
		want: request{method: "GET", path: "/api/v1/pods",
			query: url.Values{"fieldSelector": {"spec.nodeName=n1"}, "resourceVersion": {"7"}, "watch": {"true"}}},
		check: func(t *testing.T, o runtime.Object) { wantName(t, o.(*corev1.Pod).Name, "web") },
	}, {
		name: "list the budgets", reply: budgets,
		call: func(ctx context.Context, c kube.Client) (runtime.Object, error) {
			return cache.ToListerWatcherWithContext(c.PodDisruptionBudgets()).ListWithContext(ctx, metav1.ListOptions{})
		},
		want: request{method: "GET", path: "/apis/policy/v1/poddisruptionbudgets", query: url.Values{}},
		check: func(t *testing.T, o runtime.Object) {
			wantName(t, o.(*policyv1.PodDisruptionBudgetList).Items[0].Name, "web-pdb")
		},
	}, {
		name: "list the namespaces", reply: &corev1.NamespaceList{TypeMeta: metav1.TypeMeta{Kind: "NamespaceList", APIVersion: "v1"},
			Items: []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}}},
		call: func(ctx context.Context, c kube.Client) (runtime.Object, error) {
			return cache.ToListerWatcherWithContext(c.Namespaces()).ListWithContext(ctx, metav1.ListOptions{})
		},
		want:  request{method: "GET", path: "/api/v1/namespaces", query: url.Values{}},
		check: func(t *testing.T, o runtime.Object) { wantName(t, o.(*corev1.NamespaceList).Items[0].Name, "team-a") },
	}, {
		name: "patch a pod's status", reply: pod,
		call: func(ctx context.Context, c kube.Client) (runtime.Object, error) {
			return c.PatchPodStatus(ctx, "default", "web", []byte(`{"status":{}}`))
		},
		want: request{method: "PATCH", path: "/api/v1/namespaces/default/pods/web/status", query: url.Values{"fieldManager": {"probelet"}},
			contentType: "application/strategic-merge-patch+json", body: `{"status":{}}`},
		check: func(t *testing.T, o runtime.Object) { wantName(t, o.(*corev1.Pod).Name, "web") },
	}, {
		name: "create an Event", reply: event,
		call:  func(ctx context.Context, c kube.Client) (runtime.Object, error) { return c.CreateEvent(ctx, event) },
		want:  request{method: "POST", path: "/api/v1/namespaces/default/events", query: url.Values{}, contentType: "application/json"},
		check: func(t *testing.T, o runtime.Object) { wantName(t, o.(*corev1.Event).Name, "web.1") },
	}, {
		name: "patch an Event", reply: event,
		call: func(ctx context.Context, c kube.Client) (runtime.Object, error) {
			return c.PatchEvent(ctx, "default", "web.1", []byte(`{"count":2}`))
		},
		want: request{method: "PATCH", path: "/api/v1/namespaces/default/events/web.1", query: url.Values{},
			contentType: "application/strategic-merge-patch+json", body: `{"count":2}`},
		check: func(t *testing.T, o runtime.Object) { wantName(t, o.(*corev1.Event).Name, "web.1") },
	}, {
		name: "get a node", reply: node,
		call:  func(ctx context.Context, c kube.Client) (runtime.Object, error) { return c.GetNode(ctx, "n1") },
		want:  request{method: "GET", path: "/api/v1/nodes/n1", query: url.Values{}},
		check: func(t *testing.T, o runtime.Object) { wantName(t, string(o.(*corev1.Node).UID), "n-uid") },
	}, {
		name: "get a Lease", reply: lease,
		call: func(ctx context.Context, c kube.Client) (runtime.Object, error) {
			return c.GetLease(ctx, "probelet-system", "n1")
		},
		want:  request{method: "GET", path: "/apis/coordination.k8s.io/v1/namespaces/probelet-system/leases/n1", query: url.Values{}},
		check: func(t *testing.T, o runtime.Object) { wantName(t, o.(*coordinationv1.Lease).Name, "n1") },
	}, {
		name: "create a Lease", reply: lease,
		call: func(ctx context.Context, c kube.Client) (runtime.Object, error) { return c.CreateLease(ctx, lease) },
		want: request{method: "POST", path: "/apis/coordination.k8s.io/v1/namespaces/probelet-system/leases",
			query: url.Values{"fieldManager": {"probelet"}}, contentType: "application/json"},
		check: func(t *testing.T, o runtime.Object) { wantName(t, o.(*coordinationv1.Lease).Name, "n1") },
	}, {
		name: "update a Lease", reply: lease,
		call: func(ctx context.Context, c kube.Client) (runtime.Object, error) { return c.UpdateLease(ctx, lease) },
		want: request{method: "PUT", path: "/apis/coordination.k8s.io/v1/namespaces/probelet-system/leases/n1",
			query: url.Values{"fieldManager": {"probelet"}}, contentType: "application/json"},
		check: func(t *testing.T, o runtime.Object) { wantName(t, o.(*coordinationv1.Lease).ResourceVersion, "3") },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			seen := make(chan request, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				seen <- request{method: r.Method, path: r.URL.Path, query: r.URL.Query(),
					contentType: r.Header.Get("Content-Type"), body: string(body)}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(tc.reply)
			}))
			defer srv.Close()
			c, err := kube.NewClient(&rest.Config{Host: srv.URL}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tc.call(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			req := <-seen
			if tc.want.body == "" {
				req.body = "" // a JSON-encoded object: its decoding is checked by the reply
			}
			if got := req.query.Get("timeout"); req.query.Get("watch") == "" && got != kube.DefaultRequestTimeout.String() {
				t.Errorf("timeout = %q, want every call but a watch bounded by %s", got, kube.DefaultRequestTimeout)
			}
			req.query.Del("timeout")
			req.query.Del("timeoutSeconds")
			if req.method != tc.want.method || req.path != tc.want.path || req.query.Encode() != tc.want.query.Encode() ||
				req.contentType != tc.want.contentType || req.body != tc.want.body {
				t.Errorf("request = %+v\nwant      %+v", req, tc.want)
			}
			tc.check(t, got)
		})
	}
}

func wantName(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("decoded name %q, want %q", got, want)
	}
}

// TestCallsToAHangingAPIServerEndAtTheirDeadline runs each call against an
// API server that accepts the request and never answers: the call must
// fail at the configured timeout, and the failure is counted.
func TestCallsToAHangingAPIServerEndAtTheirDeadline(t *testing.T) {
	const timeout = 300 * time.Millisecond
	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.1", Namespace: "default"}}
	for _, tc := range []struct {
		call string
		do   func(context.Context, kube.Client) error
	}{
		{"list pods", func(ctx context.Context, c kube.Client) error {
			_, err := cache.ToListerWatcherWithContext(c.NodePods("n1")).ListWithContext(ctx, metav1.ListOptions{})
			return err
		}},
		{"patch pods/status", func(ctx context.Context, c kube.Client) error {
			_, err := c.PatchPodStatus(ctx, "default", "web", []byte(`{}`))
			return err
		}},
		{"create events", func(ctx context.Context, c kube.Client) error { _, err := c.CreateEvent(ctx, event); return err }},
		{"patch events", func(ctx context.Context, c kube.Client) error {
			_, err := c.PatchEvent(ctx, "default", "web.1", []byte(`{}`))
			return err
		}},
		{"update leases", func(ctx context.Context, c kube.Client) error {
			_, err := c.UpdateLease(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "probelet-system"}})
			return err
		}},
	} {
		t.Run(tc.call, func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				select { // hang until the client gives up or the test ends
				case <-r.Context().Done():
				case <-release:
				}
			}))
			defer srv.Close()
			defer close(release)
			reg := prometheus.NewRegistry()
			m := kube.NewMetrics()
			if err := m.Register(reg); err != nil {
				t.Fatal(err)
			}
			c, err := kube.NewClient(&rest.Config{Host: srv.URL, Timeout: timeout}, m)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err = tc.do(context.Background(), c)
			took := time.Since(start)
			if err == nil {
				t.Fatal("a call to a hanging API server succeeded")
			}
			// Not before the deadline; the upper bound is loose for a loaded machine.
			if took < timeout || took > timeout+5*time.Second {
				t.Errorf("the call ended after %s, want at its %s deadline", took, timeout)
			}
			if got := testutil.Metric(t, reg, "probelet_api_request_errors_total", map[string]string{"call": tc.call}); got != 1 {
				t.Errorf("errors counted for %q = %v, want 1", tc.call, got)
			}
		})
	}
}
