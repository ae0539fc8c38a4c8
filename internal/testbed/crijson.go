package testbed

import (
	"encoding/json"
	"maps"
	"path"
	"slices"
	"strconv"

	"github.com/probelet/probelet/probespec"
)

// The kubelet's labels and annotations (pkg/kubelet/types, kuberuntime/labels.go);
// the ports and grace period annotations are spec's.
const (
	labelPodName              = "io.kubernetes.pod.name"
	labelPodNamespace         = "io.kubernetes.pod.namespace"
	labelPodUID               = "io.kubernetes.pod.uid"
	labelContainerName        = "io.kubernetes.container.name"
	annotationRestartCount    = "io.kubernetes.container.restartCount"
	annotationTermMsgPath     = "io.kubernetes.container.terminationMessagePath"
	annotationTermMsgPolicy   = "io.kubernetes.container.terminationMessagePolicy"
	namespaceModeContainer    = 1 // runtime.v1.NamespaceMode_CONTAINER
	namespaceModeNode         = 2 // runtime.v1.NamespaceMode_NODE
	defaultTerminationMsgPath = "/dev/termination-log"
)

// crictl reads CRI configs as JSON with the protobuf field names; these
// mirror the few fields of runtime.v1.PodSandboxConfig and ContainerConfig
// the bed sets. Not the cri-api types themselves: this module's cri-api
// (v0.37) makes KeyValue.value bytes, which encoding/json writes as base64,
// while the bed's crictl (v1.34) reads a string.
type podConfig struct {
	Metadata     podMetadata       `json:"metadata"`
	Hostname     string            `json:"hostname"`
	LogDirectory string            `json:"log_directory"`
	Labels       map[string]string `json:"labels,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	Linux        podLinux          `json:"linux"`
}

type podMetadata struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
	Attempt   uint32 `json:"attempt"`
}

type podLinux struct {
	CgroupParent    string          `json:"cgroup_parent"`
	SecurityContext securityContext `json:"security_context"`
}

type securityContext struct {
	NamespaceOptions   namespaceOptions `json:"namespace_options"`
	Privileged         bool             `json:"privileged,omitempty"`
	RunAsUser          *int64Value      `json:"run_as_user,omitempty"`
	RunAsGroup         *int64Value      `json:"run_as_group,omitempty"`
	SupplementalGroups []int64          `json:"supplemental_groups,omitempty"`
	Capabilities       *capabilities    `json:"capabilities,omitempty"`
	NoNewPrivs         bool             `json:"no_new_privs,omitempty"`
	ReadonlyRootfs     bool             `json:"readonly_rootfs,omitempty"`
	Seccomp            *securityProfile `json:"seccomp,omitempty"`
}

// namespaceOptions: network and IPC default to POD (0), as the kubelet's;
// PID is per container.
type namespaceOptions struct {
	Network       int            `json:"network,omitempty"`
	Pid           int            `json:"pid"`
	UsernsOptions *usernsOptions `json:"userns_options,omitempty"`
}

type int64Value struct {
	Value int64 `json:"value"`
}

type capabilities struct {
	AddCapabilities  []string `json:"add_capabilities,omitempty"`
	DropCapabilities []string `json:"drop_capabilities,omitempty"`
}

// securityProfile: profile_type RuntimeDefault is 0, Localhost 2.
type securityProfile struct {
	ProfileType  int    `json:"profile_type"`
	LocalhostRef string `json:"localhost_ref,omitempty"`
}

// usernsOptions: mode POD (0), the kubelet's for hostUsers: false.
type usernsOptions struct {
	Mode int         `json:"mode"`
	Uids []idMapping `json:"uids"`
	Gids []idMapping `json:"gids"`
}

type idMapping struct {
	HostID      uint32 `json:"host_id"`
	ContainerID uint32 `json:"container_id"`
	Length      uint32 `json:"length"`
}

type containerConfig struct {
	Metadata    containerMetadata `json:"metadata"`
	Image       imageSpec         `json:"image"`
	Command     []string          `json:"command,omitempty"`
	Args        []string          `json:"args,omitempty"`
	Envs        []keyValue        `json:"envs,omitempty"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	LogPath     string            `json:"log_path"`
	Linux       containerLinux    `json:"linux"`
}

type containerMetadata struct {
	Name    string `json:"name"`
	Attempt uint32 `json:"attempt"`
}

type imageSpec struct {
	Image string `json:"image"`
}

type keyValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type containerLinux struct {
	SecurityContext securityContext `json:"security_context"`
}

// buildPodConfig returns the sandbox config for p (defaults applied).
func buildPodConfig(p PodSpec, logDir, cgroupParent string) podConfig {
	labels := map[string]string{labelPodName: p.Name, labelPodNamespace: p.Namespace, labelPodUID: p.UID}
	maps.Copy(labels, p.Labels)
	hostname := p.Name
	if p.HostNetwork {
		hostname = "" // the node's, as the kubelet leaves it: the UTS namespace is the node's too
	}
	return podConfig{
		Metadata:     podMetadata{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
		Hostname:     hostname,
		LogDirectory: logDir,
		Labels:       labels,
		Annotations:  p.Annotations,
		Linux: podLinux{CgroupParent: cgroupParent, SecurityContext: securityContext{
			NamespaceOptions: namespaceOpts(p), Privileged: p.Privileged,
		}},
	}
}

// namespaceOpts: a PID namespace per container, and the pod's user
// namespace when it has one.
func namespaceOpts(p PodSpec) namespaceOptions {
	ns := namespaceOptions{Pid: namespaceModeContainer}
	if p.HostNetwork {
		ns.Network = namespaceModeNode
	}
	if u := p.UserNamespace; u != nil {
		m := []idMapping{{HostID: u.HostID, ContainerID: 0, Length: u.Length}}
		ns.UsernsOptions = &usernsOptions{Mode: 0, Uids: m, Gids: m}
	}
	return ns
}

// containerSecurity is the container's CRI security context.
func containerSecurity(p PodSpec) securityContext {
	sc := securityContext{NamespaceOptions: namespaceOpts(p)}
	s := p.Container.Security
	if s == nil {
		return sc
	}
	sc.Privileged, sc.NoNewPrivs, sc.ReadonlyRootfs = s.Privileged, s.NoNewPrivs, s.ReadOnlyRootfs
	if s.RunAsUser != nil {
		sc.RunAsUser = &int64Value{*s.RunAsUser}
	}
	if s.RunAsGroup != nil {
		sc.RunAsGroup = &int64Value{*s.RunAsGroup}
	}
	sc.SupplementalGroups = s.SupplementalGroups
	if len(s.AddCapabilities)+len(s.DropCapabilities) > 0 {
		sc.Capabilities = &capabilities{AddCapabilities: s.AddCapabilities, DropCapabilities: s.DropCapabilities}
	}
	switch {
	case s.Seccomp == nil:
	case s.Seccomp.Localhost != "":
		sc.Seccomp = &securityProfile{ProfileType: 2, LocalhostRef: s.Seccomp.Localhost}
	case s.Seccomp.RuntimeDefault:
		sc.Seccomp = &securityProfile{ProfileType: 0}
	}
	return sc
}

// buildContainerConfig returns the container config for p.Container, with
// the kubelet's labels and annotations; attempt is its restart count.
func buildContainerConfig(p PodSpec, attempt uint32) (containerConfig, error) {
	c := p.Container
	labels := map[string]string{labelPodName: p.Name, labelPodNamespace: p.Namespace, labelPodUID: p.UID, labelContainerName: c.Name}
	maps.Copy(labels, c.Labels)
	ann := map[string]string{
		annotationRestartCount:                        strconv.FormatUint(uint64(attempt), 10),
		probespec.AnnotationPodTerminationGracePeriod: strconv.FormatInt(*p.TerminationGracePeriodSeconds, 10),
		annotationTermMsgPath:                         defaultTerminationMsgPath,
		annotationTermMsgPolicy:                       "File",
	}
	if len(c.Ports) > 0 {
		ports, err := json.Marshal(c.Ports)
		if err != nil {
			return containerConfig{}, err
		}
		ann[probespec.AnnotationContainerPorts] = string(ports)
	}
	maps.Copy(ann, c.Annotations)
	var envs []keyValue
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		envs = append(envs, keyValue{Key: k, Value: c.Env[k]})
	}
	return containerConfig{
		Metadata: containerMetadata{Name: c.Name, Attempt: attempt},
		Image:    imageSpec{Image: c.Image},
		Command:  c.Command, Args: c.Args, Envs: envs,
		Labels: labels, Annotations: ann,
		LogPath: path.Join(c.Name, strconv.FormatUint(uint64(attempt), 10)+".log"),
		Linux:   containerLinux{SecurityContext: containerSecurity(p)},
	}, nil
}
