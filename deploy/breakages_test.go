package deploy_test

import (
	"fmt"
	"strings"
)

// breakage is one way to get the deployment wrong.
type breakage struct {
	name   string
	of     string            // the shipped kustomization to wrap; default base
	target string            // kind/name the JSON patch applies to; default the agent
	ops    string            // JSON patch operations, YAML
	files  map[string]string // extra files in the wrapper directory
	extra  string            // extra kustomization YAML
	want   string            // a substring of the error
}

// kustomization wraps the shipped tree with the breakage.
func (b breakage) kustomization() string {
	of, target := b.of, b.target
	if of == "" {
		of = "base"
	}
	if target == "" {
		target = "DaemonSet/" + agentName
	}
	kind, name, _ := strings.Cut(target, "/")
	k := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../deploy/%s\n", of)
	if b.ops != "" {
		k += fmt.Sprintf("patches:\n  - target:\n      kind: %s\n      name: %s\n    patch: |-\n%s", kind, name, indent(b.ops, "      "))
	}
	return k + b.extra
}

func indent(s, prefix string) string {
	var b strings.Builder
	for line := range strings.Lines(strings.TrimSpace(s) + "\n") {
		b.WriteString(prefix + line)
	}
	return b.String()
}

const c0 = "/spec/template/spec/containers/0"

var breakages = []breakage{
	{name: "extra capability", want: "capabilities.add",
		ops: `- {op: add, path: ` + c0 + `/securityContext/capabilities/add/-, value: NET_ADMIN}`},
	{name: "privileged", want: "privileged must not be set",
		ops: `- {op: add, path: ` + c0 + `/securityContext/privileged, value: true}`},
	{name: "no-new-privs with SYS_ADMIN", want: "rejected by the API server",
		ops: `- {op: add, path: ` + c0 + `/securityContext/allowPrivilegeEscalation, value: false}`},
	{name: "writable root filesystem", want: "readOnlyRootFilesystem",
		ops: `- {op: replace, path: ` + c0 + `/securityContext/readOnlyRootFilesystem, value: false}`},
	{name: "socket file mounted", want: "/var/run/nri/nri.sock is not one probelet needs",
		ops: `
- {op: replace, path: /spec/template/spec/volumes/0/hostPath, value: {path: /var/run/nri/nri.sock, type: Socket}}
- {op: replace, path: ` + c0 + `/volumeMounts/0/mountPath, value: /var/run/nri/nri.sock}`},
	{name: "mounted elsewhere", want: "mount it at the same path",
		ops: `- {op: replace, path: ` + c0 + `/volumeMounts/1/mountPath, value: /host/run/containerd}`},
	{name: "containerd mount without propagation", want: `mountPropagation "", want "HostToContainer"`,
		ops: `- {op: remove, path: ` + c0 + `/volumeMounts/1/mountPropagation}`},
	{name: "own socket directory read-only", want: "probelet creates it",
		ops: `- {op: add, path: ` + c0 + `/volumeMounts/2/readOnly, value: true}`},
	{name: "socket outside the mounts", want: "socket /var/run/cri.sock: its directory is not mounted",
		ops: `- {op: replace, path: ` + c0 + `/args/1, value: "--runtime-endpoint=unix:///var/run/cri.sock"}`},
	{name: "more rights than it needs", want: "ClusterRole probelet grants", target: "ClusterRole/probelet",
		ops: `- {op: add, path: /rules/0/verbs/-, value: delete}`},
	{name: "status writes on every node", want: "policy binding probelet-own-node-pod-status must Deny",
		target: "ValidatingAdmissionPolicyBinding/probelet-own-node-pod-status",
		ops:    `- {op: replace, path: /spec/validationActions, value: [Audit]}`},
	{name: "status writes beyond the condition", want: "policy probelet-own-node-pod-status must leave every other status field as it was",
		target: "ValidatingAdmissionPolicy/probelet-own-node-pod-status",
		ops:    `- {op: replace, path: /spec/validations/1/expression, value: "variables.otherConditions == variables.oldOtherConditions"}`},
	{name: "metadata writes through pods/status", want: "policy probelet-own-node-pod-status must leave the metadata as it was",
		target: "ValidatingAdmissionPolicy/probelet-own-node-pod-status",
		ops:    `- {op: remove, path: /spec/validations/2}`},
	{name: "ready condition filtered loosely", want: "variable otherConditions is",
		target: "ValidatingAdmissionPolicy/probelet-own-node-pod-status",
		ops:    `- {op: replace, path: /spec/variables/3/expression, value: "'conditions' in variables.status ? variables.status.conditions.filter(c, !c.type.startsWith('probelet.io/')) : []"}`},
	{name: "policy fails open", want: "must fail closed",
		target: "ValidatingAdmissionPolicy/probelet-own-node-pod-status",
		ops:    `- {op: replace, path: /spec/failurePolicy, value: Ignore}`},
	{name: "Leases in every namespace", want: "RoleBinding default/probelet-lease binds probelet", extra: "  - lease-role.yaml\n", // a second item under resources:
		files: map[string]string{"lease-role.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: probelet-lease, namespace: default}\n" +
			"rules: [{apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, create, update]}]\n---\n" +
			"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: probelet-lease, namespace: default}\n" +
			"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: probelet-lease}\n" +
			"subjects: [{kind: ServiceAccount, name: probelet, namespace: probelet-system}]\n"}},
	{name: "Lease rights beyond renewing", want: "Role probelet-system/probelet-lease grants", target: "Role/probelet-lease",
		ops: `- {op: add, path: /rules/0/verbs/-, value: delete}`},
	{name: "other nodes' Leases", want: "policy binding probelet-own-node-lease must Deny",
		target: "ValidatingAdmissionPolicyBinding/probelet-own-node-lease",
		ops:    `- {op: replace, path: /spec/validationActions, value: [Audit]}`},
	{name: "anyone's node Leases", want: "policy binding probelet-lease-writers must Deny",
		target: "ValidatingAdmissionPolicyBinding/probelet-lease-writers",
		ops:    `- {op: replace, path: /spec/validationActions, value: [Warn]}`},
	{name: "another writer of Leases", want: "policy probelet-lease-writers allows",
		target: "ValidatingAdmissionPolicy/probelet-lease-writers",
		ops:    `- {op: replace, path: /spec/validations/0/expression, value: "true"}`},
	{name: "no token for the node-bound identity", want: "automountServiceAccountToken must be true",
		ops: `- {op: replace, path: /spec/template/spec/automountServiceAccountToken, value: false}`},
	{name: "unknown flag", want: "probelet has no flag --tcp-moed",
		ops: `- {op: add, path: ` + c0 + `/args/-, value: --tcp-moed=dial}`},
	{name: "flag twice", want: "flag --tcp-mode set twice",
		ops: `- {op: add, path: ` + c0 + `/args/-, value: --tcp-mode=dial}`},
	{name: "bad flag value", want: `"kernel" is not one of`,
		ops: `- {op: replace, path: ` + c0 + `/args/4, value: --tcp-mode=kernel}`},
	{name: "dial mode keeps eBPF privileges", want: "want exactly [SYS_ADMIN SYS_PTRACE] for --tcp-mode=dial",
		ops: `- {op: replace, path: ` + c0 + `/args/4, value: --tcp-mode=dial}`},
	{name: "probe misses a loopback listener", want: "cannot reach a listener bound to 127.0.0.1",
		ops: `- {op: remove, path: ` + c0 + `/livenessProbe/httpGet/host}`},
	{name: "probe on the wrong path", want: "want HTTP /healthz",
		ops: `- {op: replace, path: ` + c0 + `/readinessProbe/httpGet/path, value: /metrics}`},
	{name: "metrics port mismatch", want: `container port "metrics" is 9810`,
		ops: `- {op: replace, path: ` + c0 + `/ports/0/containerPort, value: 9810}`},
	{name: "no host PID namespace", want: "hostPID=false",
		ops: `- {op: replace, path: /spec/template/spec/hostPID, value: false}`},
	{name: "not node-critical", want: "priorityClassName",
		ops: `- {op: remove, path: /spec/template/spec/priorityClassName}`},
	{name: "cpu limit", want: "cpu limit set",
		ops: `- {op: add, path: ` + c0 + `/resources/limits/cpu, value: 100m}`},
	{name: "Pod Security would reject the agent", target: "Namespace/probelet-system", want: "must enforce privileged",
		ops: `- {op: remove, path: /metadata/labels/pod-security.kubernetes.io~1enforce}`},
	{name: "unknown field, strict decoding", want: `strict decoding error: unknown field "spec.template.spec.containers[0].securityContxt"`,
		ops: `- {op: add, path: ` + c0 + `/securityContxt, value: {}}`},
	{name: "unknown field, structured-merge-diff", want: "structured-merge-diff: .spec.template.spec.containers[name=\"probelet\"].securityContxt: field not declared in schema",
		ops: `- {op: add, path: ` + c0 + `/securityContxt, value: {}}`},
	{name: "wrong type", want: "openapi: spec.template.spec.hostPID in body must be of type boolean",
		ops: `- {op: replace, path: /spec/template/spec/hostPID, value: "yes"}`},
	{name: "required field missing", want: "openapi: spec.template.spec.volumes[0].hostPath.path in body is required",
		ops: `- {op: remove, path: /spec/template/spec/volumes/0/hostPath/path}`},
	{name: "duplicate list key", want: "duplicate entries for key [containerPort=9809,protocol=\"TCP\"]",
		ops: `- {op: add, path: ` + c0 + `/ports/-, value: {name: metrics2, containerPort: 9809, protocol: TCP}}`},
	{name: "installer plugin directory elsewhere", of: "overlays/preinstalled", target: "DaemonSet/" + installerName,
		want: `want /opt/nri/plugins`,
		ops:  `- {op: replace, path: ` + c0 + `/args/2, value: --plugin-dir=/host/opt/nri/plugin}`},
	{name: "installer staging on another mount", of: "overlays/preinstalled", target: "DaemonSet/" + installerName,
		want: `parent must be on the same mount`,
		ops: `
- {op: replace, path: /spec/template/spec/volumes/0/hostPath/path, value: /opt/nri/plugins}
- {op: replace, path: ` + c0 + `/volumeMounts/0/mountPath, value: /host/opt/nri/plugins}`},
	{name: "installer with capabilities", of: "overlays/preinstalled", target: "DaemonSet/" + installerName,
		want: `want drop [ALL] and nothing added`,
		ops:  `- {op: add, path: ` + c0 + `/securityContext/capabilities/add, value: [DAC_OVERRIDE]}`},
	{name: "plugin configuration names a socket", of: "overlays/preinstalled",
		want:  "--nri-socket set",
		files: map[string]string{"probelet.conf": "--nri-socket=/var/run/nri/nri.sock\n--runtime-endpoint=unix:///run/containerd/containerd.sock\n--listen=unix:///run/probelet/probelet.sock\n"},
		extra: "configMapGenerator:\n  - name: probelet-nri-config\n    namespace: probelet-system\n    behavior: replace\n    files:\n      - probelet.conf\n"},
	{name: "plugin configuration with a bad flag", of: "overlays/preinstalled",
		want:  "probelet has no flag --listen-on",
		files: map[string]string{"probelet.conf": "--runtime-endpoint=unix:///run/containerd/containerd.sock\n--listen-on=unix:///run/probelet/probelet.sock\n"},
		extra: "configMapGenerator:\n  - name: probelet-nri-config\n    namespace: probelet-system\n    behavior: replace\n    files:\n      - probelet.conf\n"},
}
