package deploy_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/probelet/probelet/probespec"
)

const (
	controllerName   = "probelet-controller"
	controllerBinary = "/usr/local/bin/probelet-controller"
)

// controllerFlags are probelet-controller's flags (DESIGN.md "Heartbeat
// and controller") with what a valid value is.
var controllerFlags = map[string]func(string) error{
	"--kubeconfig":                   absPath,
	"--lease-namespace":              oneOf(namespace),
	"--grace-period":                 anyValue,
	"--leader-elect":                 oneOf("true"), // two replicas must elect
	"--unhealthy-zone-threshold":     anyValue,
	"--large-cluster-size-threshold": anyValue,
	"--marking-rate":                 anyValue,
	"--secondary-marking-rate":       anyValue,
	"--metrics-bind-address":         hostPort,
	"--webhook-listen":               hostPort,
	"--webhook-cert-secret":          oneOf(webhookSecret),
	"--webhook-manage-cert":          oneOf("true", "false"),
	"--webhook-config":               oneOf(webhookConfig),
	"--webhook-cert-hosts":           oneOf(webhookService+"."+namespace+".svc", webhookService+"."+namespace+".svc,"+probeAPIService+"."+namespace+".svc"),
	"--webhook-cert-validity":        anyValue,
	"--probe-api-listen":             hostPort,
	"--probe-api-token-file":         absPath,
	"--probe-api-node-timeout":       anyValue,
	"--probe-api-service":            oneOf(probeAPIServiceName),
}

// The probe-state API's objects, as the controller's defaults name them.
const (
	probeAPIService     = "probelet-api"
	probeAPIServiceName = "v1alpha1.probes.probelet.io"
)

// The webhook's objects, as the controller's defaults name them.
const (
	webhookConfig  = "probelet"
	webhookService = "probelet-webhook"
	webhookSecret  = "probelet-webhook-tls"
	webhookPath    = "/mutate-pods"
)

func anyValue(string) error { return nil }

// wantControllerRules and wantControllerLeaseRules are the controller's
// rights, exactly: watch Nodes and pods, patch pods/status, write Events;
// in probelet's namespace read the node Leases and keep only its own
// election Lease.
var (
	wantControllerRules = []string{
		"/nodes:get,list,watch",
		"/pods:get,list,watch",
		"/pods/status:patch",
		"/namespaces:get,list,watch",
		"/events:create,patch",
		"events.k8s.io/events:create,patch",
		"admissionregistration.k8s.io/mutatingwebhookconfigurations[probelet]:get,update",
		"apiregistration.k8s.io/apiservices[v1alpha1.probes.probelet.io]:get,patch",
		"authentication.k8s.io/tokenreviews:create",
		"authorization.k8s.io/subjectaccessreviews:create",
		"/configmaps[extension-apiserver-authentication]:get,list,watch",
		"probes.probelet.io/nodes/podprobes:get",
	}
	wantControllerLeaseRules = []string{
		"coordination.k8s.io/leases:get,list,watch,create",
		"coordination.k8s.io/leases[probelet-controller]:update",
		"/secrets:create",
		"/secrets[probelet-webhook-tls]:get,update",
	}
)

func TestControllerKustomization(t *testing.T) {
	objs, err := load(filesys.MakeFsOnDisk(), "controller")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkController(objs); err != nil {
		t.Error(err)
	}
}

// controllerBreakages are ways to get the controller's deployment wrong.
var controllerBreakages = []breakage{
	{name: "one replica", of: "controller", target: "Deployment/" + controllerName, want: "2 replicas",
		ops: `- {op: replace, path: /spec/replicas, value: 1}`},
	{name: "no budget", of: "controller", target: "PodDisruptionBudget/" + controllerName, want: "PodDisruptionBudget",
		ops: `- {op: replace, path: /spec/selector/matchLabels, value: {app: other}}`},
	{name: "no leader election", of: "controller", target: "Deployment/" + controllerName, want: "--leader-elect",
		ops: `- {op: add, path: ` + c0 + `/args/-, value: --leader-elect=false}`},
	{name: "writes node Leases", of: "controller", target: "Role/" + controllerName, want: "Role probelet-system/probelet-controller grants",
		ops: `- {op: add, path: /rules/0/verbs/-, value: update}`},
	{name: "deletes pods", of: "controller", target: "ClusterRole/" + controllerName, want: "ClusterRole probelet-controller grants",
		ops: `- {op: add, path: /rules/1/verbs/-, value: delete}`},
	{name: "may mark pods Ready", of: "controller", target: "ValidatingAdmissionPolicy/" + controllerPolicy, want: "variables.marks[0].status == 'False'",
		ops: `- {op: replace, path: /spec/validations/0/expression, value: "size(variables.marks) == 1"}`},
	{name: "may change other conditions", of: "controller", target: "ValidatingAdmissionPolicy/" + controllerPolicy, want: "leave every other condition",
		ops: `- {op: remove, path: /spec/validations/1}`},
	{name: "policy not bound", of: "controller", target: "ValidatingAdmissionPolicyBinding/" + controllerPolicy, want: "must Deny",
		ops: `- {op: replace, path: /spec/validationActions, value: [Audit]}`},
	{name: "policy matches another account", of: "controller", target: "ValidatingAdmissionPolicy/" + controllerPolicy, want: "must match the service account",
		ops: `- {op: replace, path: /spec/matchConditions/0/expression, value: "request.userInfo.username == 'system:serviceaccount:probelet-system:probelet'"}`},
	{name: "webhook fails closed", of: "controller", target: "MutatingWebhookConfiguration/" + webhookConfig, want: "failurePolicy must be Ignore",
		ops: `- {op: replace, path: /webhooks/0/failurePolicy, value: Fail}`},
	{name: "webhook in kube-system", of: "controller", target: "MutatingWebhookConfiguration/" + webhookConfig, want: "must never match kube-system",
		ops: `- {op: remove, path: /webhooks/1/namespaceSelector/matchExpressions/1}`},
	{name: "webhook on updates", of: "controller", target: "MutatingWebhookConfiguration/" + webhookConfig, want: "pods at CREATE only",
		ops: `- {op: add, path: /webhooks/0/rules/0/operations/-, value: UPDATE}`},
	{name: "reads every secret", of: "controller", target: "Role/" + controllerName, want: "Role probelet-system/probelet-controller grants",
		ops: `- {op: remove, path: /rules/3/resourceNames}`},
	{name: "runs as root", of: "controller", target: "Deployment/" + controllerName, want: "runAsNonRoot",
		ops: `- {op: replace, path: /spec/template/spec/securityContext/runAsNonRoot, value: false}`},
}

func TestControllerChecksCatchBreakage(t *testing.T) {
	for _, tc := range controllerBreakages {
		t.Run(tc.name, func(t *testing.T) {
			fsys := memFS(t)
			writeKustomization(t, fsys, "/wrap", tc.kustomization())
			objs, err := load(fsys, "/wrap")
			if err == nil {
				err = checkController(objs)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant one containing %q", err, tc.want)
			}
		})
	}
}

// checkController checks the Deployment, its budget and its rights.
func checkController(objs *objects) error {
	d := objs.deployments[controllerName]
	if d == nil {
		return errors.New("Deployment probelet-controller missing")
	}
	var errs []error
	fail := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("Deployment probelet-controller: "+format, a...))
	}
	if d.Namespace != namespace {
		fail("namespace %q, want %s", d.Namespace, namespace)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		fail("want 2 replicas (one leads, one stands by)")
	}
	pod := &d.Spec.Template.Spec
	if pod.ServiceAccountName != controllerName || objs.serviceAccounts[controllerName] == nil {
		fail("must run as the service account %s, which must exist", controllerName)
	}
	if pod.HostNetwork || pod.HostPID || !onlyStateToken(pod.Volumes) {
		fail("needs no host access and no volume but the projected token for the probelet.io/state audience")
	}
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		fail("runAsNonRoot must be true")
	}
	if len(pod.Containers) != 1 {
		fail("want one container")
		return errors.Join(errs...)
	}
	c := pod.Containers[0]
	if !slices.Equal(c.Command, []string{controllerBinary}) {
		fail("command %q, want %s", c.Command, controllerBinary)
	}
	if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
		fail("must drop ALL capabilities, forbid privilege escalation and keep a read-only root")
	}
	flags := map[string]string{}
	for _, a := range c.Args {
		name, value, _ := strings.Cut(a, "=")
		check, known := controllerFlags[name]
		switch {
		case !known:
			fail("probelet-controller has no flag %s", name)
		case flags[name] != "":
			fail("flag %s set twice", name)
		default:
			if err := check(value); err != nil {
				fail("flag %s: %v", name, err)
			}
			flags[name] = value
		}
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if _, port, err := splitPort(flags["--metrics-bind-address"]); err != nil ||
		c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" ||
		c.LivenessProbe.HTTPGet.Port.String() != "metrics" || ports["metrics"] != port {
		fail("the liveness probe must get /healthz on the --metrics-bind-address port, named metrics")
	}
	if _, port, err := splitPort(flags["--webhook-listen"]); err != nil || ports["webhook"] != port {
		fail("--webhook-listen must be the container's port named webhook")
	}
	for _, err := range checkResources(&c) {
		fail("%v", err)
	}
	errs = append(errs, checkControllerBudget(objs, d.Spec.Template.Labels), checkControllerRights(objs),
		checkWebhook(objs, d.Spec.Template.Labels))
	return errors.Join(errs...)
}

func splitPort(hostport string) (string, int32, error) {
	i := strings.LastIndex(hostport, ":")
	if i < 0 {
		return "", 0, fmt.Errorf("%q has no port", hostport)
	}
	p, err := strconv.ParseInt(hostport[i+1:], 10, 32)
	return hostport[:i], int32(p), err
}

// checkControllerBudget: a PodDisruptionBudget keeps one replica.
func checkControllerBudget(objs *objects, podLabels map[string]string) error {
	b := objs.budgets[controllerName]
	if b == nil || b.Spec.Selector == nil {
		return errors.New("PodDisruptionBudget probelet-controller missing")
	}
	sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(podLabels)) || b.Spec.MinAvailable == nil || b.Spec.MinAvailable.IntValue() != 1 {
		return errors.New("PodDisruptionBudget probelet-controller must keep 1 of the controller's pods (minAvailable 1, selecting them)")
	}
	return nil
}

// checkControllerRights checks the controller's roles exactly.
func checkControllerRights(objs *objects) error {
	var errs []error
	role := objs.clusterRoles[controllerName]
	if role == nil {
		return errors.New("ClusterRole probelet-controller missing")
	}
	got := named(role.Rules)
	if !slices.Equal(got, wantControllerRules) {
		errs = append(errs, fmt.Errorf("ClusterRole probelet-controller grants %q, want exactly %q", got, wantControllerRules))
	}
	want := rbacv1.Subject{Kind: "ServiceAccount", Name: controllerName, Namespace: namespace}
	if b := objs.roleBindings[controllerName]; b == nil || b.RoleRef.Name != controllerName || len(b.Subjects) != 1 || b.Subjects[0] != want {
		errs = append(errs, fmt.Errorf("ClusterRoleBinding probelet-controller must bind the role to %s/%s only", namespace, controllerName))
	}
	key := namespace + "/" + controllerName
	r, rb := objs.nsRoles[key], objs.nsRoleBindings[key]
	if r == nil || rb == nil {
		return errors.Join(append(errs, fmt.Errorf("Role and RoleBinding %s must exist (the Leases)", key))...)
	}
	if lease := named(r.Rules); !slices.Equal(lease, wantControllerLeaseRules) {
		errs = append(errs, fmt.Errorf("Role %s grants %q, want exactly %q", key, named(r.Rules), wantControllerLeaseRules))
	}
	if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != controllerName || len(rb.Subjects) != 1 || rb.Subjects[0] != want {
		errs = append(errs, fmt.Errorf("RoleBinding %s must bind the Role to %s/%s only", key, namespace, controllerName))
	}
	p, err := accountPolicy(objs, controllerPolicy, controllerName)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs, checkGuards(p, controllerPolicyGuards(), controllerPolicyVariables())...)
	return errors.Join(append(errs, checkWebhookConfigPolicy(objs)...)...)
}

// webhookConfigPolicy keeps the controller's update of its webhook
// configuration to the caBundle (TestClusterWebhook tries the rest).
const webhookConfigPolicy = "probelet-controller-webhook-config"

// checkWebhookConfigPolicy checks that policy: every write of a webhook
// configuration by the controller's identity matched, only UPDATE allowed,
// and nothing but clientConfig.caBundle and server-kept metadata changed.
func checkWebhookConfigPolicy(objs *objects) []error {
	p, err := accountPolicy(objs, webhookConfigPolicy, controllerName)
	if err != nil {
		return []error{err}
	}
	var errs []error
	if rules := p.Spec.MatchConstraints.ResourceRules; len(rules) != 1 ||
		!slices.Equal(rules[0].Operations, []admissionregistrationv1.OperationType{"CREATE", "UPDATE", "DELETE"}) ||
		!slices.Contains(rules[0].Resources, "mutatingwebhookconfigurations") {
		errs = append(errs, fmt.Errorf("policy %s must match every CREATE, UPDATE and DELETE of mutatingwebhookconfigurations", p.Name))
	}
	guards := []struct{ what, cel string }{
		{"allow updates only", "request.operation == 'UPDATE'"},
		{"keep the same webhooks", "size(variables.webhooks) == size(variables.oldWebhooks)"},
		{"keep every field of a webhook but its clientConfig", "w.all(k, k == 'clientConfig' || (k in o && w[k] == o[k])) && o.all(k, k == 'clientConfig' || k in w)"},
		{"keep every field of a clientConfig but its caBundle", "w.clientConfig.all(k, k == 'caBundle' || (k in o.clientConfig && w.clientConfig[k] == o.clientConfig[k])) && o.clientConfig.all(k, k == 'caBundle' || k in w.clientConfig)"},
		{"keep the metadata", "object.metadata.all(k, k in variables.serverMetadata || (k in oldObject.metadata && object.metadata[k] == oldObject.metadata[k]))"},
	}
	vars := map[string]string{"serverMetadata": "['resourceVersion', 'managedFields', 'generation']"}
	return append(errs, checkGuards(p, guards, vars)...)
}

// controllerPolicy keeps the controller's status writes to marking pods
// not Ready (TestClusterProbeletDownSafetyNet tries the others).
const controllerPolicy = "probelet-controller-pod-status"

// controllerPolicyGuards are probelet's status guards but the node's (the
// controller marks every node's pods), and the mark's own.
func controllerPolicyGuards() []struct{ what, cel string } {
	var guards []struct{ what, cel string }
	for _, g := range policyGuards {
		if !strings.Contains(g.cel, "variables.nodeNames") {
			guards = append(guards, g)
		}
	}
	return append(guards,
		struct{ what, cel string }{"leave one probelet.io/ready condition, False", "size(variables.marks) == 1 && 'status' in variables.marks[0] && variables.marks[0].status == 'False'"},
		struct{ what, cel string }{"with one of the controller's reasons", "variables.marks[0].reason in ['ProbeletUnavailable', 'ProbeletNotRunning']"})
}

func controllerPolicyVariables() map[string]string {
	vars := maps.Clone(policyVariables)
	vars["marks"] = "'conditions' in variables.status ? variables.status.conditions.filter(c, c.type == 'probelet.io/ready') : []"
	return vars
}

// named flattens rules to "group/resource[names]:verbs".
func named(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, rule := range rules {
		for _, res := range rule.Resources {
			name := ""
			if len(rule.ResourceNames) > 0 {
				name = "[" + strings.Join(rule.ResourceNames, ",") + "]"
			}
			out = append(out, strings.Join(rule.APIGroups, ",")+"/"+res+name+":"+strings.Join(rule.Verbs, ","))
		}
	}
	return out
}

// checkWebhook checks the webhook configuration: fail-safe (Ignore, a
// short timeout), pods at CREATE only, never kube-system or probelet's
// namespace, through the Service in front of the controller's pods.
func checkWebhook(objs *objects, podLabels map[string]string) error {
	cfg := objs.webhooks[webhookConfig]
	if cfg == nil || len(cfg.Webhooks) != 2 {
		return fmt.Errorf("MutatingWebhookConfiguration %s must exist with its two webhooks (managed namespaces, managed pods)", webhookConfig)
	}
	var errs []error
	fail := func(w string, format string, a ...any) {
		errs = append(errs, fmt.Errorf("webhook %s: "+format, append([]any{w}, a...)...))
	}
	for _, w := range cfg.Webhooks {
		if w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Ignore {
			fail(w.Name, "failurePolicy must be Ignore: a pod created while the webhook is away keeps the kubelet's probes")
		}
		if w.TimeoutSeconds == nil || *w.TimeoutSeconds > 5 {
			fail(w.Name, "timeoutSeconds must be short (at most 5)")
		}
		if w.SideEffects == nil || *w.SideEffects != admissionregistrationv1.SideEffectClassNone {
			fail(w.Name, "sideEffects must be None")
		}
		if w.ReinvocationPolicy == nil || *w.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy {
			fail(w.Name, "reinvocationPolicy must be IfNeeded: containers a later webhook adds are converted too")
		}
		if len(w.Rules) != 1 || !slices.Equal(w.Rules[0].Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}) ||
			!slices.Equal(w.Rules[0].Resources, []string{"pods"}) {
			fail(w.Name, "must match pods at CREATE only")
		}
		s := w.ClientConfig.Service
		if s == nil || s.Name != webhookService || s.Namespace != namespace || s.Path == nil || *s.Path != webhookPath ||
			s.Port == nil || *s.Port != 443 {
			fail(w.Name, "must call the Service %s/%s on port 443 at %s", namespace, webhookService, webhookPath)
		}
		excluded := false
		if sel := w.NamespaceSelector; sel != nil {
			for _, e := range sel.MatchExpressions {
				if e.Key == corev1.LabelMetadataName && e.Operator == metav1.LabelSelectorOpNotIn &&
					slices.Contains(e.Values, "kube-system") && slices.Contains(e.Values, namespace) {
					excluded = true
				}
			}
		}
		if !excluded {
			fail(w.Name, "must never match kube-system or %s (namespaceSelector)", namespace)
		}
		optOut := false
		if sel := w.ObjectSelector; sel != nil {
			optOut = sel.MatchLabels[probespec.LabelProbes] == probespec.LabelManaged
			for _, e := range sel.MatchExpressions {
				optOut = optOut || e.Key == probespec.LabelProbes && e.Operator == metav1.LabelSelectorOpNotIn && slices.Contains(e.Values, probespec.LabelUnmanaged)
			}
		}
		if !optOut {
			fail(w.Name, "must leave a pod labelled %s=%s alone (objectSelector)", probespec.LabelProbes, probespec.LabelUnmanaged)
		}
	}
	svc := objs.services[webhookService]
	if svc == nil || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort.String() != "webhook" ||
		!labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(podLabels)) {
		errs = append(errs, fmt.Errorf("Service %s must send port 443 to the controller pods' webhook port", webhookService))
	}
	return errors.Join(errs...)
}

// onlyStateToken reports whether vols are none, or only the projected
// ServiceAccount token for the nodes' probe state: audience
// probelet.io/state, nothing else projected.
func onlyStateToken(vols []corev1.Volume) bool {
	for _, v := range vols {
		p := v.Projected
		if p == nil || len(p.Sources) != 1 || p.Sources[0].ServiceAccountToken == nil ||
			p.Sources[0].ServiceAccountToken.Audience != probespec.StateAudience {
			return false
		}
	}
	return len(vols) <= 1
}
