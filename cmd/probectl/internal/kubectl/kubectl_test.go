package kubectl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/api/probes/convert"
	probes "github.com/probelet/probelet/api/probes/v1alpha1"
	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/cmd/probectl/internal/cli"
	"github.com/probelet/probelet/cmd/probectl/internal/kubectl"
	"github.com/probelet/probelet/cri/server/servertest"
)

// fakeAPI serves the probe-state API for the PodProbes given, as the
// controller would from the node, and no Events.
func fakeAPI(t *testing.T, pods []probes.PodProbes, forbidden string) string {
	t.Helper()
	mux := http.NewServeMux()
	write := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	status := func(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg})
	}
	mux.HandleFunc("/apis/probes.probelet.io/v1alpha1/namespaces/{ns}/podprobes/{name}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("ns") == forbidden {
			status(w, 403, metav1.StatusReasonForbidden, `podprobes.probes.probelet.io "x" is forbidden: User "alice" cannot get resource "podprobes"`)
			return
		}
		for _, p := range pods {
			if p.Namespace == r.PathValue("ns") && p.Name == r.PathValue("name") {
				write(w, p)
				return
			}
		}
		status(w, 404, metav1.StatusReasonNotFound, `podprobes.probes.probelet.io "`+r.PathValue("name")+`" not found`)
	})
	mux.HandleFunc("/apis/probes.probelet.io/v1alpha1/namespaces/{ns}/podprobes", func(w http.ResponseWriter, r *http.Request) {
		list := probes.PodProbesList{TypeMeta: metav1.TypeMeta{Kind: "PodProbesList", APIVersion: "probes.probelet.io/v1alpha1"}}
		for _, p := range pods {
			if p.Namespace == r.PathValue("ns") {
				list.Items = append(list.Items, p)
			}
		}
		write(w, list)
	})
	mux.HandleFunc("/api/v1/namespaces/{ns}/events", func(w http.ResponseWriter, _ *http.Request) {
		write(w, map[string]any{"kind": "EventList", "apiVersion": "v1", "items": []any{}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + srv.URL + `"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: default}}]
current-context: c
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fromNode is the fixture's pods as the API serves them: the node's
// ListExplained, converted as the controller converts it.
func fromNode(t *testing.T, endpoint string) []probes.PodProbes {
	t.Helper()
	conn := servertest.Dial(t, endpoint)
	resp, err := apiv1.NewProbeletClient(conn).ListExplained(context.Background(), &apiv1.ListExplainedRequest{})
	if err != nil {
		t.Fatal(err)
	}
	byPod := map[string]*probes.PodProbes{}
	var order []string
	for _, w := range resp.Containers {
		c := w.Container
		key := c.PodNamespace + "/" + c.PodName
		p, ok := byPod[key]
		if !ok {
			p = &probes.PodProbes{TypeMeta: metav1.TypeMeta{Kind: "PodProbes", APIVersion: "probes.probelet.io/v1alpha1"},
				ObjectMeta: metav1.ObjectMeta{Name: c.PodName, Namespace: c.PodNamespace, UID: types.UID(c.PodUid)},
				NodeName:   "node-1", Source: probes.Source{Answered: true}}
			byPod[key] = p
			order = append(order, key)
		}
		p.Containers = append(p.Containers, convert.Container(w))
	}
	var out []probes.PodProbes
	for _, k := range order {
		out = append(out, *byPod[k])
	}
	return out
}

func run(t *testing.T, kubeconfig string, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := cli.Env{Lookup: func(string) (string, bool) { return "", false }, Clock: clocktesting.NewFakePassiveClock(servertest.Now)}
	err := cli.ExecuteKubectl(context.Background(), append(args, "--kubeconfig", kubeconfig), cli.IOStreams{Out: &out, ErrOut: &errOut}, env, kubectl.New())
	return out.String() + errOut.String(), cli.ExitCode(err)
}

func probectl(t *testing.T, endpoint string, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	env := cli.Env{Lookup: func(k string) (string, bool) { return endpoint, k == cli.SocketEnv },
		Clock: clocktesting.NewFakePassiveClock(servertest.Now)}
	if err := cli.Execute(context.Background(), args, cli.IOStreams{Out: &out, ErrOut: &errOut}, env); err != nil {
		t.Fatalf("probectl %v: %v\n%s", args, err, errOut.String())
	}
	return out.String()
}

// TestKubectlProbeletSaysWhatProbectlSays: for the same containers, the
// plugin through the API prints what probectl prints from the node.
func TestKubectlProbeletSaysWhatProbectlSays(t *testing.T) {
	_, endpoint, _, _ := servertest.StartFixture(t)
	kubeconfig := fakeAPI(t, fromNode(t, endpoint), "")
	for _, tc := range []struct {
		probectl, plugin []string
	}{
		{[]string{"why", "default/web/app"}, []string{"why", "web/app"}},
		{[]string{"why", "kube-system/dns/coredns"}, []string{"why", "dns", "-n", "kube-system"}},
		{[]string{"history", "default/web/app"}, []string{"history", "web/app"}},
		{[]string{"history", "default/web/app", "--probe", "readiness", "--limit", "2"}, []string{"history", "web/app", "--probe", "readiness", "--limit", "2"}},
		{[]string{"ps", "default/web"}, []string{"get", "web"}},
		{[]string{"ps", "default/web", "-o", "wide"}, []string{"get", "-o", "wide"}},
		{[]string{"why", "default/web/app", "-o", "json"}, []string{"why", "web/app", "-o", "json"}},
	} {
		t.Run(strings.Join(tc.plugin, " "), func(t *testing.T) {
			// What the API does not carry: the sandbox.
			want := withoutNodeOnly(probectl(t, endpoint, tc.probectl...))
			got, code := run(t, kubeconfig, tc.plugin...)
			got = withoutNodeOnly(got)
			if code != 0 || got != want {
				t.Fatalf("kubectl probelet %s (exit %d):\n%s\nprobectl %s:\n%s", strings.Join(tc.plugin, " "), code, got, strings.Join(tc.probectl, " "), want)
			}
		})
	}
}

// withoutNodeOnly drops the sandbox ID, which only a node's socket gives.
func withoutNodeOnly(out string) string {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, "podSandboxId") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

// TestKubectlProbeletSaysWhyItCannot: a missing pod or container, an
// ambiguous pod, a forbidden namespace and a node that did not answer
// each get their words and exit code.
func TestKubectlProbeletSaysWhyItCannot(t *testing.T) {
	_, endpoint, _, _ := servertest.StartFixture(t)
	pods := fromNode(t, endpoint)
	pods = append(pods, probes.PodProbes{ObjectMeta: metav1.ObjectMeta{Name: "lost", Namespace: "default"}, NodeName: "node-2",
		Source: probes.Source{Reason: "Timeout", Message: "probelet on node node-2 did not answer within 2s"}})
	kubeconfig := fakeAPI(t, pods, "secret")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"why", "nope"}, cli.ExitNotFound, `no pod "nope" in namespace "default"`},
		{[]string{"why", "web/nope"}, cli.ExitNotFound, `pod web has no container "nope" (it has app, sidecar)`},
		{[]string{"why", "web"}, cli.ExitUsage, "pod web has containers app, sidecar: name one (web/CONTAINER)"},
		{[]string{"why", "a/b/c"}, cli.ExitUsage, "is not POD or POD/CONTAINER"},
		{[]string{"why", "x", "-n", "secret"}, cli.ExitError, "forbidden"},
		{[]string{"why", "lost"}, cli.ExitError, "pod default/lost: Timeout: probelet on node node-2 did not answer within 2s"},
		{[]string{"get", "-o", "wide", "--no-trunc"}, 0, "pod default/lost: Timeout: probelet on node node-2 did not answer within 2s"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, code := run(t, kubeconfig, tc.args...)
			if code != tc.code || !strings.Contains(got, tc.want) {
				t.Fatalf("exit %d, want %d; output:\n%s\nwant %q", code, tc.code, got, tc.want)
			}
		})
	}
}
