//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	probes "github.com/probelet/probelet/api/probes/v1alpha1"
	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/controller/probestate"
	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/internal/selfsigned"
	"github.com/probelet/probelet/probespec"
)

// probeAPINodeTimeout is the controller's --probe-api-node-timeout here.
const probeAPINodeTimeout = 2 * time.Second

// TestProbeStateAPIOnCluster: on a real control plane with two nodes, the
// probe-state API answers a user with only `view` in namespace A — the
// failing probe's threshold, its last outputs (bounded and escaped) and the
// reason — through the aggregator, from the pods' nodes; the same user is
// Forbidden in namespace B and across namespaces. A tenant pod's own token
// (for the state audience), no token, and the controller's API token all
// read nothing from a node's state listener, while a flood of made-up
// tokens leaves the victim's probes on time. A node whose probelet was
// SIGKILLed answers for its pods with why, within the node timeout.
func TestProbeStateAPIOnCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := cluster.Start(t)
	n1, n2 := joinNode(t, c), joinNode(t, c)
	n1.applyDeployRights()
	applyControllerRights(t, c, "rbac.yaml", "serviceaccount.yaml", "admission-policy.yaml", "probe-api.yaml")
	n1.startProbelet("--state-listen", ":0")
	n2.startProbelet("--state-listen", ":0")
	startProbeAPIController(t, n1)
	a, b := namespaceWithViewer(t, c, "team-a", "alice"), namespaceWithViewer(t, c, "team-b", "bob")

	// Probes whose outputs are a terminal attack and long: a failing exec
	// (half a mebibyte: through the runtime probelet reads up to one) and
	// an HTTP probe answered by a mebibyte body.
	bomb := `printf '\033]52;c;aGk=\007\033[2Jgone'; head -c 524288 /dev/zero | tr '\0' x; exit 1`
	big := `mkdir -p /www && printf '\033]52;c;aGk=\007\033[2Jbody' > /www/big && head -c 1048576 /dev/zero | tr '\0' y >> /www/big && exec httpd -f -p 8080 -h /www`
	failing := n1.apiPod("failing", shell(big), probespec.ContainerProbes{
		Readiness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: shell(bomb)}},
			PeriodSeconds: 1, FailureThreshold: 3},
		Liveness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/big", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 2}}, false)
	failing.Namespace = a
	victim := n1.apiPod("victim", shell("mkdir -p /www && echo ok > /www/ready && exec httpd -f -p 8080 -h /www"), probespec.ContainerProbes{
		Readiness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 1}}, false)
	victim.Namespace = a
	away := n2.apiPod("away", shell("exec sleep 3600"), probespec.ContainerProbes{
		Liveness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 2}}, false)
	away.Namespace = a
	other := n1.apiPod("secret", shell("exec sleep 3600"), probespec.ContainerProbes{
		Liveness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 2}}, false)
	other.Namespace = b
	for _, p := range []*corev1.Pod{failing, victim, away, other} {
		n1.create(p)
	}

	alice := impersonating(t, c, "alice")
	get := func(ns, name string) (*probes.PodProbes, error) {
		out := &probes.PodProbes{}
		err := alice.Get().AbsPath("/apis", probes.GroupName, "v1alpha1", "namespaces", ns, "podprobes", name).Do(ctx).Into(out)
		return out, err
	}

	// The failing pod, as alice reads it: at its threshold, why, the
	// outputs cut and carried as data.
	var got *probes.PodProbes
	eventually(t, 90*time.Second, "alice to read team-a/failing at its failure threshold", func() (bool, string) {
		p, err := get(a, "failing")
		if err != nil {
			return false, err.Error()
		}
		got = p
		if len(p.Containers) != 1 || len(p.Containers[0].Probes) != 2 {
			return false, fmt.Sprintf("source %+v, %d containers", p.Source, len(p.Containers))
		}
		pr, live := probeOfType(p, "Readiness"), probeOfType(p, "Liveness")
		return pr.Result == "Failure" && pr.Consecutive >= 3 && live.LastOutput != "",
			fmt.Sprintf("readiness %s ×%d, liveness output %d bytes", pr.Result, pr.Consecutive, len(live.LastOutput))
	})
	ctr := got.Containers[0]
	pr, live := probeOfType(got, "Readiness"), probeOfType(got, "Liveness")
	if !got.Source.Answered || got.NodeName != n1.k.NodeName() || pr.Spec.FailureThreshold != 3 ||
		pr.Spec.TimeoutSeconds != 1 || len(pr.History) == 0 || ctr.Ready {
		t.Errorf("team-a/failing: %+v", got)
	}
	for _, o := range []struct{ what, output, prefix string }{
		{"the exec probe's", pr.LastOutput, "\x1b]52;c;aGk=\a\x1b[2Jgonexxx"},
		{"the HTTP probe's", live.LastOutput, "\x1b]52;c;aGk=\a\x1b[2Jbodyyyy"},
	} {
		if n := len(o.output); n > probestate.DefaultOutputLimit+64 || !strings.HasPrefix(o.output, o.prefix) || !strings.Contains(o.output, "bytes, cut") {
			t.Errorf("%s last output (%d bytes): %.120q, want its first %d bytes and how long it was", o.what, n, o.output, probestate.DefaultOutputLimit)
		}
	}
	why := ""
	for _, x := range ctr.Explanations {
		why += x.Subject + ": " + x.Text + "\n"
	}
	if !strings.Contains(why, "not ready") || !strings.Contains(why, "readiness") {
		t.Errorf("the explanations say %q, want why the container is not ready", why)
	}

	// kubectl, as alice: the YAML and the table.
	out, err := c.Kubectl("get", "podprobes", "-n", a, "failing", "-o", "yaml", "--as", "alice")
	if err != nil {
		t.Fatalf("kubectl get podprobes -o yaml as alice: %v\n%s", err, out)
	}
	var fromYAML probes.PodProbes
	if err := yaml.Unmarshal(out, &fromYAML); err != nil || fromYAML.Name != "failing" || strings.ContainsRune(string(out), 0x1b) {
		t.Errorf("kubectl -o yaml: %v, %s, raw escapes: %v", err, fromYAML.Name, strings.ContainsRune(string(out), 0x1b))
	}
	out, err = c.Kubectl("get", "podprobes", "-n", a, "-o", "wide", "--as", "alice")
	if err != nil || !strings.Contains(string(out), "app/readiness") || strings.ContainsRune(string(out), 0x1b) ||
		!strings.Contains(string(out), `\x1b]52`) {
		t.Errorf("kubectl get podprobes -o wide as alice: %v\n%s", err, out)
	}
	t.Logf("kubectl get podprobes -n %s -o wide, as alice:\n%s", a, out)

	// kubectl probelet, as alice: probectl's words from the API.
	plugin := func(args ...string) (string, error) {
		cmd := exec.Command(bins.kubectlProbelet, append(args, "--kubeconfig", c.Kubeconfig(), "--as", "alice")...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := plugin("why", "failing", "-n", a); err != nil || !strings.Contains(out, "not ready") ||
		!strings.Contains(out, "last readiness runs") || strings.ContainsRune(out, 0x1b) || !strings.Contains(out, `\x1b]52`) {
		t.Errorf("kubectl probelet why failing -n %s as alice: %v\n%s", a, err, out)
	} else {
		t.Logf("kubectl probelet why failing -n %s, as alice:\n%s", a, out)
	}
	if out, err := plugin("history", "failing", "-n", a, "--probe", "readiness"); err != nil || !strings.Contains(out, "Failure") {
		t.Errorf("kubectl probelet history as alice: %v\n%s", err, out)
	}
	if out, err := plugin("why", "secret", "-n", b); err == nil || !strings.Contains(strings.ToLower(out), "forbidden") {
		t.Errorf("kubectl probelet why secret -n %s as alice: %v\n%s; want forbidden", b, err, out)
	}

	// Forbidden where view is not granted, and across namespaces.
	for _, args := range [][]string{{"get", "podprobes", "-n", b}, {"get", "podprobes", "-n", b, "secret"}, {"get", "podprobes", "-A"}} {
		out, err := c.Kubectl(append(args, "--as", "alice")...)
		if err == nil || !strings.Contains(strings.ToLower(fmt.Sprint(err)+string(out)), "forbidden") {
			t.Errorf("kubectl %s as alice: %v, %s; want Forbidden", strings.Join(args, " "), err, out)
		}
	}

	// The nodes' state listener, attacked: a tenant's own token for the
	// state audience, none, and a token for the API server.
	endpoint, pin := stateEndpoint(t, c, n1)
	tenantToken := tokenFor(t, c, a, "default", probespec.StateAudience)
	apiToken := tokenFor(t, c, "probelet-system", "probelet-controller", "")
	for _, tc := range []struct {
		name, token string
		want        codes.Code
	}{
		{"a tenant's own token for the state audience", tenantToken, codes.PermissionDenied},
		{"no token", "", codes.Unauthenticated},
		{"the controller's token for the API server", apiToken, codes.Unauthenticated},
		{"a made-up token", "made-up", codes.Unauthenticated},
	} {
		resp, err := readState(endpoint, pin, tc.token)
		if status.Code(err) != tc.want || len(resp.GetContainers()) > 0 {
			t.Errorf("%s: %d containers, %v; want %v and nothing", tc.name, len(resp.GetContainers()), err, tc.want)
		}
	}
	// A flood of made-up tokens: the victim's readiness runs stay on
	// their period.
	floodStart := time.Now()
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() { _, _ = readState(endpoint, pin, fmt.Sprintf("flood-%d", i)) })
	}
	wg.Wait()
	time.Sleep(2 * time.Second) // a period or two after the flood, in the history
	v, err := get(a, "victim")
	if err != nil || len(v.Containers) != 1 {
		t.Fatalf("team-a/victim: %v %+v", err, v)
	}
	runs := v.Containers[0].Probes[0].History
	late := 0
	for i := 1; i < len(runs); i++ {
		if runs[i].Time.After(floodStart) && runs[i].Time.Sub(runs[i-1].Time.Time) > 1500*time.Millisecond {
			late++
		}
		if runs[i].Result != "Success" {
			t.Errorf("the victim's run at %s: %s %q", runs[i].Time, runs[i].Result, runs[i].Output)
		}
	}
	if late > 0 {
		t.Errorf("%d of the victim's readiness runs came more than half a period late during the flood (%s)", late, time.Since(floodStart))
	}

	// A hostile node: its probelet's Lease (written with that node's own
	// bound token, as a compromised probelet would) names a listener that
	// accepts and never answers. Its pod answers Timeout; the others'
	// answers do not wait for it beyond the node timeout.
	hostile := hostileNode(t, n1, a)

	// SIGKILL node 2's probelet: its pods answer why, within the timeout.
	n2.d.kill()
	start := time.Now()
	p, err := get(a, "away")
	took := time.Since(start)
	if err != nil || p.Source.Answered || p.Source.Reason == "" || took > probeAPINodeTimeout+3*time.Second {
		t.Errorf("team-a/away with its node's probelet killed: %v, %+v after %s; want why within %s", err, p.Source, took, probeAPINodeTimeout)
	}
	t.Logf("team-a/away with its node's probelet killed: %s %q (%s)", p.Source.Reason, p.Source.Message, took)
	start = time.Now()
	list := &probes.PodProbesList{}
	if err := alice.Get().AbsPath("/apis", probes.GroupName, "v1alpha1", "namespaces", a, "podprobes").Do(ctx).Into(list); err != nil {
		t.Fatalf("listing team-a: %v", err)
	}
	took = time.Since(start)
	if len(list.Items) != 4 {
		t.Errorf("team-a lists %d pods, want 4", len(list.Items))
	}
	for _, it := range list.Items {
		if (it.NodeName == n1.k.NodeName()) != it.Source.Answered || (it.NodeName == hostile && it.Source.Reason != probestate.ReasonTimeout) {
			t.Errorf("%s on %s: %+v", it.Name, it.NodeName, it.Source)
		}
	}
	if took > probeAPINodeTimeout+3*time.Second {
		t.Errorf("listing team-a with a silent node and a killed probelet took %s, want within the node timeout (%s)", took, probeAPINodeTimeout)
	}
	t.Logf("listing team-a with one node's probelet killed and one silent took %s", took)
}

// probeOfType is the PodProbes' first container's probe of type t.
func probeOfType(p *probes.PodProbes, t string) probes.Probe {
	for _, pr := range p.Containers[0].Probes {
		if pr.Type == t {
			return pr
		}
	}
	return probes.Probe{}
}

// hostileNode registers a Node whose probelet Lease names a listener that
// accepts and never answers, and a pod bound to it in namespace ns; it
// returns the node's name.
func hostileNode(t *testing.T, n *clusterNode, ns string) string {
	t.Helper()
	ctx := context.Background()
	name := "hostile-" + n.k.NodeName()
	node, err := n.admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	lis, err := net.Listen("tcp", net.JoinHostPort(n.k.NodeIP(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() }) // held open, never answered
		}
	}()
	_, pin, _ := selfsigned.New("hostile", time.Now())
	stateLease(t, n, node, lis.Addr().String(), pin)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-hostile", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "app", Image: "none"}}}}
	if _, err := n.admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// stateLease writes node's probelet Lease naming its state listener at
// endpoint with the certificate pin, with the node's own bound token, as
// its probelet (or one compromised) would.
func stateLease(t *testing.T, n *clusterNode, node *corev1.Node, endpoint, pin string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", n.tokenFor(node.Name))
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node.Name, Namespace: "probelet-system",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
		Annotations:     map[string]string{probespec.AnnotationStateEndpoint: endpoint, probespec.AnnotationStateCertSHA256: pin}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr(node.Name), LeaseDurationSeconds: ptr[int32](3600), RenewTime: &now}}
	if _, err := client.CoordinationV1().Leases("probelet-system").Create(context.Background(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatalf("node %s's Lease, with its own token: %v", node.Name, err)
	}
}

// applyControllerRights applies deploy/controller's files.
func applyControllerRights(t *testing.T, c *cluster.Cluster, files ...string) {
	t.Helper()
	for _, f := range files {
		if out, err := c.Kubectl("apply", "-n", "probelet-system", "-f", filepath.Join(repoRoot(), "deploy", "controller", f)); err != nil {
			t.Fatalf("kubectl apply %s: %v\n%s", f, err, out)
		}
	}
}

// startProbeAPIController runs probelet-controller with its service
// account, serving the probe-state API on the node's address, which the
// probelet-api Service's endpoints name (no kube-proxy: the aggregator
// routes to endpoints), and waits until the APIService is Available.
func startProbeAPIController(t *testing.T, n *clusterNode) *daemon {
	t.Helper()
	ctx := context.Background()
	kubeconfig, err := n.c.ServiceAccountKubeconfig(ctx, "probelet-system", "probelet-controller", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(tokenFor(t, n.c, "probelet-system", "probelet-controller", probespec.StateAudience)), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	d := &daemon{t: t, bed: n.bed, name: "probelet-controller", bin: bins.controller,
		args: []string{"--kubeconfig", kubeconfig, "--metrics-bind-address", "127.0.0.1:0", "--leader-elect=false",
			"--webhook-listen", "", "--webhook-cert-hosts", "probelet-api.probelet-system.svc",
			"--probe-api-listen", net.JoinHostPort(n.k.NodeIP(), port), "--probe-api-token-file", tokenFile,
			"--probe-api-node-timeout", probeAPINodeTimeout.String()}}
	t.Cleanup(d.cleanup)
	d.start()
	p := intstrPort(t, port)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "probelet-api-e2e", Namespace: "probelet-system",
			Labels: map[string]string{discoveryv1.LabelServiceName: "probelet-api"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{n.k.NodeIP()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("probe-api"), Port: &p, Protocol: ptr(corev1.ProtocolTCP)}},
	}
	if _, err := n.admin.DiscoveryV1().EndpointSlices("probelet-system").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "the APIService v1alpha1.probes.probelet.io Available", func() (bool, string) {
		out, err := n.c.Kubectl("get", "apiservice", "v1alpha1.probes.probelet.io", "-o",
			`jsonpath={.status.conditions[?(@.type=="Available")].status} {.status.conditions[?(@.type=="Available")].message}`)
		return err == nil && strings.HasPrefix(string(out), "True"), fmt.Sprintf("%v %s", err, out)
	})
	return d
}

func intstrPort(t *testing.T, port string) int32 {
	t.Helper()
	var p int32
	if _, err := fmt.Sscan(port, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// namespaceWithViewer makes namespace ns, where user may only view.
func namespaceWithViewer(t *testing.T, c *cluster.Cluster, ns, user string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-view", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
	if _, err := c.Client().RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the default ServiceAccount of "+ns, func() (bool, string) {
		_, err := c.Client().CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	return ns
}

// impersonating is a REST client of the cluster acting as user.
func impersonating(t *testing.T, c *cluster.Cluster, user string) rest.Interface {
	t.Helper()
	cfg := c.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	cfg.GroupVersion = &probes.SchemeGroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = probestateCodecs
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// tokenFor is a token of namespace/name's ServiceAccount for audience
// ("" is the API server's).
func tokenFor(t *testing.T, c *cluster.Cluster, namespace, name, audience string) string {
	t.Helper()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr[int64](3600)}}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	tr, err := c.Client().CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// stateEndpoint is the node's state listener as its Lease names it.
func stateEndpoint(t *testing.T, c *cluster.Cluster, n *clusterNode) (string, string) {
	t.Helper()
	var endpoint, pin string
	eventually(t, 30*time.Second, "node "+n.k.NodeName()+"'s Lease to name its state listener", func() (bool, string) {
		l, err := c.Client().CoordinationV1().Leases("probelet-system").Get(context.Background(), n.k.NodeName(), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		endpoint, pin = l.Annotations[probespec.AnnotationStateEndpoint], l.Annotations[probespec.AnnotationStateCertSHA256]
		return endpoint != "" && pin != "", fmt.Sprint(l.Annotations)
	})
	if strings.HasPrefix(endpoint, ":") {
		endpoint = n.k.NodeIP() + endpoint
	}
	return endpoint, pin
}

// readState asks a node's state listener, pinned, with token ("": none).
func readState(endpoint, pin, token string) (*apiv1.ListExplainedResponse, error) {
	conn, err := grpc.NewClient("passthrough:///"+endpoint, grpc.WithTransportCredentials(credentials.NewTLS(selfsigned.Pinned(pin))))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	return apiv1.NewProbeletClient(conn).ListExplained(ctx, &apiv1.ListExplainedRequest{})
}

// probestateCodecs decode the probe-state API's types.
var probestateCodecs = serializer.NewCodecFactory(probestate.NewScheme()).WithoutConversion()
