package deploy_test

import (
	"errors"
	"fmt"
	"net"
	"path"
	"path/filepath"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Names the contracts refer to.
const (
	namespace       = "probelet-system"
	agentName       = "probelet"
	metricsPortName = "metrics"
	healthPath      = "/healthz"
)

// hostMount is a host directory the agent sees at the same path, so its
// flags name host paths.
type hostMount struct {
	pathType    corev1.HostPathType
	readOnly    bool
	propagation corev1.MountPropagationMode
	ebpfOnly    bool // needed only when eBPF may load (--tcp-mode auto|ebpf)
}

// agentMounts are the agent's host paths, and the only ones it may have,
// with the directory of the runtime's CRI socket (runtimeDir: containerd's
// /run/containerd, CRI-O's /var/run/crio). Sockets are reached through their
// directories: a bind-mounted socket file keeps pointing at the old inode
// after the runtime re-creates it.
func agentMounts(runtimeDir string) map[string]hostMount {
	return map[string]hostMount{
		"/var/run/nri":      {pathType: corev1.HostPathDirectory, readOnly: true},
		runtimeDir:          {pathType: corev1.HostPathDirectory, readOnly: true, propagation: corev1.MountPropagationHostToContainer},
		"/run/probelet":     {pathType: corev1.HostPathDirectoryOrCreate},
		"/var/lib/probelet": {pathType: corev1.HostPathDirectoryOrCreate},
		"/sys/kernel/btf":   {pathType: corev1.HostPathDirectory, readOnly: true, ebpfOnly: true},
	}
}

// requiredFlags are the flags the DaemonSet always sets explicitly, so the
// manifest, not a compiled-in default, decides the paths it mounts.
var requiredFlags = []string{"--nri-socket", "--runtime-endpoint", "--listen", "--metrics-bind-address", "--tcp-mode", "--state-dir"}

// wantCaps is the minimal capability set for a TCP mode: namespace access
// always (setns for sock_diag, ptrace-read of /proc/<pid>/ns/net), eBPF
// loading and attaching unless probelet only dials.
func wantCaps(tcpMode string) []corev1.Capability {
	caps := []corev1.Capability{"SYS_ADMIN", "SYS_PTRACE"}
	if tcpMode != "dial" {
		caps = append(caps, "BPF", "PERFMON")
	}
	slices.Sort(caps)
	return caps
}

// checkAgent checks the probelet DaemonSet against every contract.
func checkAgent(ds *appsv1.DaemonSet) error {
	pod := &ds.Spec.Template.Spec
	errs := checkAgentPod(ds)
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
		return errors.Join(append(errs, fmt.Errorf("want exactly one container, have %d (+%d init)", len(pod.Containers), len(pod.InitContainers)))...)
	}
	c := &pod.Containers[0]
	flags, err := parseFlags(c.Args)
	errs = append(errs, err)
	for _, f := range requiredFlags {
		if flags[f] == "" {
			errs = append(errs, fmt.Errorf("args: %s is not set", f))
		}
	}
	mode := flags["--tcp-mode"]
	errs = append(errs, checkAgentSecurity(c, mode)...)
	errs = append(errs, checkAgentMounts(pod, c, mode, agentMounts(filepath.Dir(unixPath(flags["--runtime-endpoint"]))))...)
	errs = append(errs, checkSocketFlags(c, flags)...)
	errs = append(errs, checkHealth(c, flags["--metrics-bind-address"])...)
	errs = append(errs, checkResources(c)...)
	return errors.Join(errs...)
}

func checkAgentPod(ds *appsv1.DaemonSet) []error {
	pod := &ds.Spec.Template.Spec
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if ds.Namespace != namespace {
		fail("namespace %q, want %q", ds.Namespace, namespace)
	}
	if !pod.HostPID || !pod.HostNetwork {
		fail("hostPID=%v hostNetwork=%v, want both (eBPF snapshot, /proc netns paths, dialing pod IPs from the node)", pod.HostPID, pod.HostNetwork)
	}
	if pod.DNSPolicy != corev1.DNSDefault {
		fail("dnsPolicy %q, want Default (the node's resolver, like the kubelet)", pod.DNSPolicy)
	}
	if pod.PriorityClassName != "system-node-critical" {
		fail("priorityClassName %q, want system-node-critical", pod.PriorityClassName)
	}
	if !toleratesAll(pod.Tolerations) {
		fail("tolerations %v do not tolerate every taint", pod.Tolerations)
	}
	if pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken {
		fail("automountServiceAccountToken must be true: the pod-bound token names the node (admission-policy.yaml)")
	}
	if len(pod.Containers) > 0 && !hasNodeNameEnv(&pod.Containers[0]) {
		fail("env NODE_NAME must come from the downward API's spec.nodeName (--node-name)")
	}
	if pod.NodeSelector["kubernetes.io/os"] != "linux" {
		fail("nodeSelector must pin kubernetes.io/os=linux")
	}
	return append(errs, checkPodSecurity(pod)...)
}

// checkPodSecurity: root (the runtime sockets are root's) under the
// runtime's default seccomp profile.
func checkPodSecurity(pod *corev1.PodSpec) []error {
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 0 {
		return []error{errors.New("pod securityContext.runAsUser must be 0")}
	}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		return []error{errors.New("pod seccompProfile must be RuntimeDefault")}
	}
	return nil
}

func toleratesAll(ts []corev1.Toleration) bool {
	return slices.ContainsFunc(ts, func(t corev1.Toleration) bool {
		return t.Operator == corev1.TolerationOpExists && t.Key == "" && t.Effect == ""
	})
}

func checkAgentSecurity(c *corev1.Container, tcpMode string) []error {
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil {
		return []error{errors.New("container securityContext.capabilities missing")}
	}
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if sc.Privileged != nil && *sc.Privileged {
		fail("privileged must not be set")
	}
	if !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		fail("capabilities.drop %v, want [ALL]", sc.Capabilities.Drop)
	}
	add := slices.Sorted(slices.Values(sc.Capabilities.Add))
	if want := wantCaps(tcpMode); !slices.Equal(add, want) {
		fail("capabilities.add %v, want exactly %v for --tcp-mode=%s", add, want, tcpMode)
	}
	// The API server rejects allowPrivilegeEscalation=false with SYS_ADMIN.
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation && slices.Contains(add, "SYS_ADMIN") {
		fail("allowPrivilegeEscalation=false together with SYS_ADMIN is rejected by the API server")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		fail("readOnlyRootFilesystem must be true")
	}
	if sc.SeccompProfile != nil && sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		fail("container seccompProfile %q overrides RuntimeDefault", sc.SeccompProfile.Type)
	}
	return errs
}

func checkAgentMounts(pod *corev1.PodSpec, c *corev1.Container, tcpMode string, agentMounts map[string]hostMount) []error {
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	var errs []error
	seen := map[string]bool{}
	for _, m := range c.VolumeMounts {
		hp := vols[m.Name].HostPath
		if hp == nil {
			errs = append(errs, fmt.Errorf("volumeMount %s: not a hostPath volume", m.Name))
			continue
		}
		seen[hp.Path] = true
		errs = append(errs, checkHostMount(m, hp, tcpMode, agentMounts)...)
	}
	for p, want := range agentMounts {
		if !seen[p] && (!want.ebpfOnly || tcpMode != "dial") {
			errs = append(errs, fmt.Errorf("host path %s is not mounted", p))
		}
	}
	return errs
}

func checkHostMount(m corev1.VolumeMount, hp *corev1.HostPathVolumeSource, tcpMode string, agentMounts map[string]hostMount) []error {
	want, ok := agentMounts[hp.Path]
	switch {
	case !ok:
		return []error{fmt.Errorf("host path %s is not one probelet needs", hp.Path)}
	case want.ebpfOnly && tcpMode == "dial":
		return []error{fmt.Errorf("host path %s is only for eBPF; --tcp-mode=dial does not need it", hp.Path)}
	}
	var errs []error
	fail := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("host path %s: "+format, append([]any{hp.Path}, a...)...))
	}
	if m.MountPath != hp.Path {
		fail("mounted at %s; mount it at the same path so flags name host paths", m.MountPath)
	}
	if hp.Type == nil || *hp.Type != want.pathType {
		fail("type %v, want %s (sockets are reached through their directory)", ptrString(hp.Type), want.pathType)
	}
	if m.ReadOnly != want.readOnly {
		fail("readOnly=%v, want %v", m.ReadOnly, want.readOnly)
	}
	if got := ptrString(m.MountPropagation); got != string(want.propagation) {
		fail("mountPropagation %q, want %q", got, want.propagation)
	}
	return errs
}

// checkSocketFlags: every socket the flags name lies in a mounted host
// directory, writable where probelet creates its own.
func checkSocketFlags(c *corev1.Container, flags map[string]string) []error {
	sockets := map[string]bool{ // socket path -> probelet creates it
		flags["--nri-socket"]:                 false,
		unixPath(flags["--runtime-endpoint"]): false,
		unixPath(flags["--listen"]):           true,
	}
	var errs []error
	for sock, creates := range sockets {
		if sock == "" {
			continue
		}
		m := mountHolding(c, sock)
		switch {
		case m == nil:
			errs = append(errs, fmt.Errorf("socket %s: its directory is not mounted", sock))
		case creates && m.ReadOnly:
			errs = append(errs, fmt.Errorf("socket %s: probelet creates it, but %s is read-only", sock, m.MountPath))
		}
	}
	return errs
}

// mountHolding returns the volume mount whose directory contains file.
func mountHolding(c *corev1.Container, file string) *corev1.VolumeMount {
	for i, m := range c.VolumeMounts {
		if strings.HasPrefix(path.Dir(file)+"/", strings.TrimSuffix(m.MountPath, "/")+"/") {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

// checkHealth: the kubelet's probes of probelet reach /healthz on the
// address probelet binds.
func checkHealth(c *corev1.Container, bind string) []error {
	host, port, err := net.SplitHostPort(bind)
	if err != nil {
		return []error{fmt.Errorf("--metrics-bind-address %q: %w", bind, err)}
	}
	var declared int32
	for _, p := range c.Ports {
		if p.Name == metricsPortName && p.Protocol == corev1.ProtocolTCP {
			declared = p.ContainerPort
		}
	}
	if fmt.Sprint(declared) != port {
		return []error{fmt.Errorf("container port %q is %d, --metrics-bind-address port is %s", metricsPortName, declared, port)}
	}
	var errs []error
	probes := map[string]*corev1.Probe{"startupProbe": c.StartupProbe, "livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe}
	for name, p := range probes {
		if err := checkHealthProbe(p, declared, host); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	return errs
}

func checkHealthProbe(p *corev1.Probe, port int32, bindHost string) error {
	if p == nil || p.HTTPGet == nil {
		return errors.New("want an httpGet probe")
	}
	g := p.HTTPGet
	if g.Path != healthPath || (g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP) {
		return fmt.Errorf("scheme %q path %q, want HTTP %s", g.Scheme, g.Path, healthPath)
	}
	if g.Port.String() != metricsPortName && g.Port.IntValue() != int(port) {
		return fmt.Errorf("port %s does not reach port %s (%d)", g.Port.String(), metricsPortName, port)
	}
	// The kubelet dials the pod IP (the node's IP with hostNetwork) unless
	// host is set; a loopback listener answers only loopback.
	if ip := net.ParseIP(bindHost); ip != nil && ip.IsLoopback() && !net.ParseIP(g.Host).IsLoopback() {
		return fmt.Errorf("host %q cannot reach a listener bound to %s", g.Host, bindHost)
	}
	return nil
}

// checkResources: tiny requests, a memory limit, no CPU limit (throttling
// would delay probes into false failures), GOMEMLIMIT from the limit.
func checkResources(c *corev1.Container) []error {
	r := c.Resources
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if cpu, ok := r.Requests[corev1.ResourceCPU]; !ok || cpu.Cmp(resource.MustParse("100m")) > 0 {
		fail("cpu request %v, want set and at most 100m", cpu.String())
	}
	if mem, ok := r.Requests[corev1.ResourceMemory]; !ok || mem.Cmp(resource.MustParse("64Mi")) > 0 {
		fail("memory request %v, want set and at most 64Mi", mem.String())
	}
	if _, ok := r.Limits[corev1.ResourceMemory]; !ok {
		fail("memory limit missing")
	}
	if _, ok := r.Limits[corev1.ResourceCPU]; ok {
		fail("cpu limit set: throttling delays probes")
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "GOMEMLIMIT" && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil &&
			e.ValueFrom.ResourceFieldRef.Resource == "limits.memory"
	}) {
		fail("GOMEMLIMIT must come from limits.memory")
	}
	return errs
}

// ptrString prints a string-typed pointer, "" for nil.
func ptrString[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

// hasNodeNameEnv reports whether c gets NODE_NAME from spec.nodeName.
func hasNodeNameEnv(c *corev1.Container) bool {
	return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
	})
}
