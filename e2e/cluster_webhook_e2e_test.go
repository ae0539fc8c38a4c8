//go:build e2e

package e2e_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/probelet/probelet/controller/marking"
	"github.com/probelet/probelet/controller/webhook"
	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// webhookCertValidity is the serving certificate's lifetime in the test:
// renewed every 20 s, so a minute of admissions sees it rotate.
const webhookCertValidity = 30 * time.Second

// warnings collects the API server's admission warnings.
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.got
	w.got = nil
	return out
}

// TestClusterWebhook: issue 29's webhook on the real control plane, with
// deploy/controller's configuration (its Service swapped for the
// controller's address on this machine):
//   - a labelled namespace: a plain Deployment with kubelet probes (HTTP
//     readiness, TCP liveness, exec startup) gets pods with the annotation
//     and the gate and no probes in their spec; the kubelet runs none (no
//     kubelet Unhealthy Event when the app fails, probelet's appear); the
//     pod is Ready only when probelet says so;
//   - an unlabelled namespace: the pod spec as written;
//   - a probe naming a foreign host: created unchanged, with the warning;
//   - the serving certificate rotated twice under a minute of admissions,
//     none of them missed;
//   - the webhook away: a pod keeps its probes, and is reported once the
//     controller is back.
func TestClusterWebhook(t *testing.T) {
	t.Parallel()
	n := startClusterNode(t)
	ctx := context.Background()
	for _, f := range []string{"serviceaccount.yaml", "rbac.yaml", "admission-policy.yaml"} {
		if out, err := n.c.Kubectl("apply", "-n", "probelet-system", "-f", filepath.Join(repoRoot(), "deploy", "controller", f)); err != nil {
			t.Fatalf("kubectl apply controller/%s: %v\n%s", f, err, out)
		}
	}
	addr := freeLoopbackPort(t)
	n.createWebhookConfig(ctx, "https://"+addr+webhook.Path)
	ctl := startWebhookController(t, n, addr)
	eventually(t, 60*time.Second, "the caBundle and a served certificate", func() (bool, string) {
		cfg, err := n.admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "probelet", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, err = servedSerial(addr)
		return len(cfg.Webhooks[0].ClientConfig.CABundle) > 0 && err == nil, fmt.Sprintf("caBundle %d bytes, serving: %v", len(cfg.Webhooks[0].ClientConfig.CABundle), err)
	})
	controllerRightsEndAtCABundle(ctx, t, n)
	for _, ns := range []struct {
		name    string
		managed bool
	}{{"managed", true}, {"plain", false}} {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.name}}
		if ns.managed {
			obj.Labels = map[string]string{probespec.LabelProbes: probespec.LabelManaged}
		}
		if _, err := n.admin.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// A plain Deployment in each namespace.
	for _, ns := range []string{"managed", "plain"} {
		if _, err := n.admin.AppsV1().Deployments(ns).Create(ctx, n.probedDeployment(ns), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	managed := n.onlyPod(ctx, "managed", "app=web")
	if c := managed.Spec.Containers[0]; c.LivenessProbe != nil || c.ReadinessProbe != nil || c.StartupProbe != nil {
		t.Fatalf("managed pod keeps kubelet probes: %+v", c)
	}
	// The API server defaults probes before admission: the annotation
	// holds them as the kubelet would have run them.
	anno := managed.Annotations[probespec.AnnotationProbes]
	var probes probespec.PodProbes
	if err := json.Unmarshal([]byte(anno), &probes); err != nil {
		t.Fatalf("managed pod's annotation %q: %v", anno, err)
	}
	if p := probes["app"]; p.Readiness == nil || p.Readiness.HTTPGet == nil || p.Liveness == nil || p.Liveness.TCPSocket == nil ||
		p.Startup == nil || p.Startup.Exec == nil || !marking.Gated(managed) {
		t.Fatalf("managed pod: annotation %q, gates %+v; want the three probes and the gate", anno, managed.Spec.ReadinessGates)
	}
	plain := n.onlyPod(ctx, "plain", "app=web")
	want := n.probedDeployment("plain").Spec.Template.Spec.Containers[0]
	if c := plain.Spec.Containers[0]; c.ReadinessProbe == nil || c.LivenessProbe == nil || c.StartupProbe == nil ||
		c.ReadinessProbe.HTTPGet.Path != want.ReadinessProbe.HTTPGet.Path || plain.Annotations[probespec.AnnotationProbes] != "" || marking.Gated(plain) {
		t.Fatalf("plain namespace's pod changed: %+v, annotations %v", c, plain.Annotations)
	}

	// probelet, not the kubelet, runs the managed pod's probes.
	podReady := func(ns, name string, want corev1.ConditionStatus) {
		eventually(t, 60*time.Second, fmt.Sprintf("%s/%s Ready %s", ns, name, want), func() (bool, string) {
			p, err := n.admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			gate, _ := condition(p, readyGate)
			ready, _ := condition(p, corev1.PodReady)
			return gate.Status == want && ready.Status == want, fmt.Sprintf("gate %+v, Ready %+v", gate, ready)
		})
	}
	podReady("managed", managed.Name, corev1.ConditionTrue)
	id := n.containerIDIn("managed", managed.Name)
	mustExec(t, n.bed, id, "rm", "/www/ready")
	podReady("managed", managed.Name, corev1.ConditionFalse)
	eventually(t, 30*time.Second, "probelet's Unhealthy Event", func() (bool, string) {
		bySource := n.unhealthyEvents(ctx, "managed", managed.Name)
		return bySource["probelet"] > 0, fmt.Sprintf("%v", bySource)
	})
	if k := n.unhealthyEvents(ctx, "managed", managed.Name)["kubelet"]; k > 0 {
		t.Fatalf("the kubelet probed the converted pod: %d Unhealthy Events", k)
	}

	// A probe probelet would refuse: the pod as written, and why.
	w := &warnings{}
	cfg := n.c.RESTConfig()
	cfg.WarningHandler = w
	warned, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	scan := pendingPod("scan", &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Host: "169.254.169.254", Path: "/latest/meta-data/", Port: intstr.FromInt32(80)}}})
	created, err := warned.CoreV1().Pods("managed").Create(ctx, scan, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := w.take(); len(got) != 1 || !strings.Contains(got[0], "keeps its kubelet probes") || !strings.Contains(got[0], "httpGet.host") {
		t.Fatalf("warnings %q, want probelet's naming the host", got)
	}
	if created.Spec.Containers[0].ReadinessProbe == nil || created.Annotations[probespec.AnnotationProbes] != "" {
		t.Fatalf("a refused pod was changed: %+v", created)
	}

	// A minute of admissions across two rotations of the certificate.
	serials := map[string]bool{}
	for i := 0; i < 30 || len(serials) < 3; i++ {
		if i > 45 {
			t.Fatalf("%d admissions saw %d serving certificates, want 3 (two rotations)", i, len(serials))
		}
		if s, err := servedSerial(addr); err == nil {
			serials[s] = true
		}
		p, err := n.admin.CoreV1().Pods("managed").Create(ctx, pendingPod(fmt.Sprintf("rot-%d", i), execProbeSpec(10, 3, "true")), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Annotations[probespec.AnnotationProbes] == "" {
			t.Fatalf("admission %d (%d certificates seen so far) was not converted: the webhook failed it", i, len(serials))
		}
		time.Sleep(2 * time.Second)
	}
	t.Logf("%d serving certificates across the admissions", len(serials))

	// The webhook away: the pod keeps its probes; it is reported later.
	ctl.kill()
	away, err := n.admin.CoreV1().Pods("managed").Create(ctx, pendingPod("away", execProbeSpec(10, 3, "true")), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if away.Spec.Containers[0].ReadinessProbe == nil || away.Annotations[probespec.AnnotationProbes] != "" {
		t.Fatalf("a pod created while the webhook was down was converted: %+v", away)
	}
	ctl.start()
	eventually(t, 60*time.Second, "the Event on the pod created while the webhook was away", func() (bool, string) {
		evs, err := n.admin.CoreV1().Events("managed").List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.name": "away", "reason": probespec.EventWebhookMissed}.String()})
		if err != nil {
			return false, err.Error()
		}
		return len(evs.Items) == 1, fmt.Sprintf("%d Events", len(evs.Items))
	})
	if got := ctl.sum("probelet_webhook_missed_pods_total"); got != 1 {
		t.Fatalf("probelet_webhook_missed_pods_total %v, want 1 (only the pod created while the webhook was away)", got)
	}
}

// freeLoopbackPort is a port free on 127.0.0.1 now.
func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// createWebhookConfig creates deploy/controller's webhook configuration,
// each webhook calling url instead of the Service (the controller is a
// process on this machine).
func (n *clusterNode) createWebhookConfig(ctx context.Context, url string) {
	n.t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(), "deploy", "controller", "webhook.yaml"))
	if err != nil {
		n.t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var cfg admissionregistrationv1.MutatingWebhookConfiguration
		if err := yaml.UnmarshalStrict([]byte(doc), &cfg); err != nil || cfg.Kind != "MutatingWebhookConfiguration" {
			continue
		}
		for i := range cfg.Webhooks {
			cfg.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url}
		}
		if _, err := n.admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &cfg, metav1.CreateOptions{}); err != nil {
			n.t.Fatal(err)
		}
		return
	}
	n.t.Fatal("no MutatingWebhookConfiguration in deploy/controller/webhook.yaml")
}

// controllerRightsEndAtCABundle: with the controller's own token (a
// compromised replica), every write of its webhook configuration that
// would widen the webhook is refused by deploy/controller's admission
// policy — all resources, another URL, no namespace guard, failing closed,
// a second webhook, its labels, a new configuration, a deletion — and only
// a new caBundle goes through.
func controllerRightsEndAtCABundle(ctx context.Context, t *testing.T, n *clusterNode) {
	t.Helper()
	cfg, err := n.c.ServiceAccountConfig(ctx, "probelet-system", "probelet-controller", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	as, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	configs := as.AdmissionregistrationV1().MutatingWebhookConfigurations()
	type config = admissionregistrationv1.MutatingWebhookConfiguration
	// The attempts are dry runs (admission runs, nothing is stored), so
	// one let through does not break the webhook for the rest of the test.
	dryRun := metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}
	update := func(change func(*config), opts metav1.UpdateOptions) error {
		c, err := n.admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "probelet", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(c)
		_, err = configs.Update(ctx, c, opts)
		return err
	}
	// The API server loads a new policy within seconds.
	eventually(t, 30*time.Second, "the webhook configuration's admission policy in force", func() (bool, string) {
		err := update(func(c *config) { c.Labels = map[string]string{"probe": "policy"} }, dryRun)
		return apierrors.IsForbidden(err), fmt.Sprint(err)
	})
	fail := admissionregistrationv1.Fail
	elsewhere := "https://192.0.2.1/mutate"
	for _, w := range []struct {
		what   string
		change func(*config)
	}{
		{"rules for every resource", func(c *config) {
			c.Webhooks[0].Rules = []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}}}}
		}},
		{"another URL", func(c *config) { c.Webhooks[0].ClientConfig.URL = &elsewhere }},
		{"no namespace guard", func(c *config) { c.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{} }},
		{"failing closed", func(c *config) { c.Webhooks[0].FailurePolicy = &fail }},
		{"a second webhook", func(c *config) {
			extra := *c.Webhooks[0].DeepCopy()
			extra.Name = "secrets.probelet.io"
			c.Webhooks = append(c.Webhooks, extra)
		}},
		{"a label", func(c *config) { c.Labels = map[string]string{"team": "elsewhere"} }},
	} {
		if err := update(w.change, dryRun); !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			t.Errorf("probelet-controller's token updating its webhook configuration with %s: %v, want Forbidden", w.what, err)
		}
	}
	if _, err := configs.Create(ctx, &config{ObjectMeta: metav1.ObjectMeta{Name: "probelet-elsewhere"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsForbidden(err) {
		t.Errorf("probelet-controller's token creating a webhook configuration: %v, want Forbidden", err)
	}
	if err := configs.Delete(ctx, "probelet", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsForbidden(err) {
		t.Errorf("probelet-controller's token deleting its webhook configuration: %v, want Forbidden", err)
	}
	// Its job: a new caBundle (a PEM bundle with one more line break
	// still holds the same certificate).
	if err := update(func(c *config) {
		c.Webhooks[0].ClientConfig.CABundle = append(c.Webhooks[0].ClientConfig.CABundle, '\n')
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("probelet-controller's token updating its webhook's caBundle: %v", err)
	}
}

// startWebhookController runs probelet-controller with its service
// account, serving the webhook on addr with a short-lived certificate.
func startWebhookController(t *testing.T, n *clusterNode, addr string) *daemon {
	t.Helper()
	return startWebhookControllerIn(t, n, addr, nil)
}

// servedSerial is the serial of the certificate the webhook serves now.
func servedSerial(addr string) (string, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) // reads the certificate, trusts nothing
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

// probedDeployment is a plain Deployment of one busybox web server with
// kubelet probes: HTTP readiness, TCP liveness, exec startup.
func (n *clusterNode) probedDeployment(ns string) *appsv1.Deployment {
	one := int32(1)
	grace := int64(2)
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{NodeName: n.k.NodeName(), TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{Name: "app", Image: testbed.BusyboxImage, ImagePullPolicy: corev1.PullNever,
						Command: shell("mkdir -p /www && echo ok > /www/ready && touch /tmp/started && exec httpd -f -p 8080 -h /www"),
						Ports:   httpPort,
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}},
							PeriodSeconds: 1, FailureThreshold: 1},
						LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(appPort)}},
							PeriodSeconds: 2, FailureThreshold: 3},
						StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/started"}}},
							PeriodSeconds: 1, FailureThreshold: 30},
					}}}}}}
}

// pendingPod is a pod on a node that does not exist, with a readiness
// probe: admitted, never run.
func pendingPod(name string, readiness *corev1.Probe) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: "nowhere", Containers: []corev1.Container{{Name: "app", Image: testbed.BusyboxImage,
			ImagePullPolicy: corev1.PullNever, ReadinessProbe: readiness}}}}
}

// onlyPod waits for the one pod of selector in ns.
func (n *clusterNode) onlyPod(ctx context.Context, ns, selector string) *corev1.Pod {
	n.t.Helper()
	var pod *corev1.Pod
	eventually(n.t, 60*time.Second, "the pod of "+ns+"/"+selector, func() (bool, string) {
		pods, err := n.admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil || len(pods.Items) != 1 {
			return false, fmt.Sprintf("%v, %d pods", err, len(pods.Items))
		}
		pod = &pods.Items[0]
		return true, ""
	})
	return pod
}

// unhealthyEvents counts the pod's Unhealthy Events by source.
func (n *clusterNode) unhealthyEvents(ctx context.Context, ns, pod string) map[string]int {
	n.t.Helper()
	evs, err := n.admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": pod, "reason": "Unhealthy"}.String()})
	if err != nil {
		n.t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range evs.Items {
		out[e.Source.Component] += int(max(e.Count, 1))
	}
	return out
}

var _ rest.WarningHandler = (*warnings)(nil)
