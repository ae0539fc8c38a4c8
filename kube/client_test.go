package kube_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

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
		name: "patch a pod's status", reply: pod,
		call: func(ctx context.Context, c kube.Client) (runtime.Object, error) {
			return c.PatchPodStatus(ctx, "default", "web", []byte(`{"status":{}}`))
		},
		want: request{method: "PATCH", path: "/api/v1/namespaces/default/pods/web/status", query: url.Values{"fieldManager": {"probelet"}},
			contentType: "application/strategic-merge-patch+json", body: `{"status":{}}`},
		check: func(t *testing.T, o runtime.Object) { wantName(t, o.(*corev1.Pod).Name, "web") },
	}, {
		name: "create an Event", reply: event,
		call:  func(_ context.Context, c kube.Client) (runtime.Object, error) { return c.Events().Create(event) },
		want:  request{method: "POST", path: "/api/v1/namespaces/default/events", query: url.Values{}, contentType: "application/json"},
		check: func(t *testing.T, o runtime.Object) { wantName(t, o.(*corev1.Event).Name, "web.1") },
	}, {
		name: "update an Event", reply: event,
		call:  func(_ context.Context, c kube.Client) (runtime.Object, error) { return c.Events().Update(event) },
		want:  request{method: "PUT", path: "/api/v1/namespaces/default/events/web.1", query: url.Values{}, contentType: "application/json"},
		check: func(t *testing.T, o runtime.Object) { wantName(t, o.(*corev1.Event).Name, "web.1") },
	}, {
		name: "patch an Event", reply: event,
		call: func(_ context.Context, c kube.Client) (runtime.Object, error) {
			return c.Events().Patch(event, []byte(`{"count":2}`))
		},
		want: request{method: "PATCH", path: "/api/v1/namespaces/default/events/web.1", query: url.Values{},
			contentType: "application/strategic-merge-patch+json", body: `{"count":2}`},
		check: func(t *testing.T, o runtime.Object) { wantName(t, o.(*corev1.Event).Name, "web.1") },
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
			c, err := kube.NewClient(&rest.Config{Host: srv.URL})
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
			req.query.Del("timeout") // the clientset's watch adds one too; its value is random
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
