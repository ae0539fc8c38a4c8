package directexec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// unsupported says why a container's probes go through the runtime; reason
// is the metric label (one of the reason* constants), detail what the log
// line says.
type unsupported struct{ reason, detail string }

func (u *unsupported) Error() string { return u.reason + ": " + u.detail }

// The fallback reasons, the values of the metric's reason label.
const (
	reasonHelper    = "helper"    // the helper is missing or broken
	reasonBundle    = "bundle"    // no readable OCI bundle for the container
	reasonState     = "state"     // the runtime's state directory holds no bundles (not learned yet, or wrong)
	reasonRuntime   = "runtime"   // not runc (kata, gVisor, crun, ...), or not containerd (CRI-O)
	reasonSpec      = "spec"      // a field of config.json probelet does not know
	reasonProcess   = "process"   // a process setting the helper does not apply
	reasonNamespace = "namespace" // a namespace type the helper does not know
	reasonSeccomp   = "seccomp"   // a seccomp feature the helper does not apply
	reasonLSM       = "lsm"       // an SELinux label, or an AppArmor profile the kernel refused
	reasonCgroup    = "cgroup"    // a cgroup of the container not found here
	reasonIdentity  = "identity"  // the init process could not be tied to the container
	reasonSetup     = "setup"     // the helper failed to set up a probe
)

func unsupportedf(reason, format string, args ...any) *unsupported {
	return &unsupported{reason: reason, detail: fmt.Sprintf(format, args...)}
}

// ociConfig is the part of an OCI config.json that decides how an exec
// runs, in runtime-spec's own types. Decoding is strict where it matters:
// a field probelet does not know could confine the exec, so it sends the
// container to the runtime (the key scans below, and unknown fields
// refused inside process and the linux sections probelet reads).
type ociConfig struct {
	Process specs.Process
	Linux   ociLinux
}

// The top-level keys of runtime-spec v1.3; others (a VM, another OS)
// send the container to the runtime.
var knownTopLevel = []string{"ociVersion", "process", "root", "hostname", "domainname", "mounts", "hooks", "annotations", "linux"}

// ociLinux is what an exec takes from the linux section.
type ociLinux struct {
	CgroupsPath string
	Namespaces  []specs.LinuxNamespace
	Seccomp     *specs.LinuxSeccomp
}

// The linux keys an exec either handles (namespaces, seccomp, the user
// namespace's mappings, the cgroup) or that only shape the container when
// it is created (mounts, devices, resources, sysctls, ...).
var knownLinux = []string{
	"namespaces", "seccomp", "uidMappings", "gidMappings", "cgroupsPath",
	"resources", "devices", "netDevices", "sysctl", "rootfsPropagation",
	"maskedPaths", "readonlyPaths", "mountLabel", "timeOffsets",
	// runc applies these to an exec too; the helper does not, so a
	// container that sets them goes to the runtime.
	"intelRdt", "memoryPolicy", "personality",
}

// parseConfig decodes config.json and says whether the helper can run an
// exec in that container exactly as runc would.
func parseConfig(data []byte) (*ociConfig, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, unsupportedf(reasonBundle, "config.json: %v", err)
	}
	for k := range top {
		if !slices.Contains(knownTopLevel, k) {
			return nil, unsupportedf(reasonSpec, "config.json has an unknown field %q", k)
		}
	}
	var cfg ociConfig
	if isNull(top["process"]) {
		return nil, unsupportedf(reasonSpec, "config.json has no process")
	}
	if err := strict(top["process"], &cfg.Process); err != nil {
		return nil, unsupportedf(reasonSpec, "config.json process: %v", err)
	}
	if err := parseLinux(top["linux"], &cfg.Linux); err != nil {
		return nil, err
	}
	if err := checkProcess(&cfg.Process); err != nil {
		return nil, err
	}
	return &cfg, nil
}

func parseLinux(raw json.RawMessage, l *ociLinux) error {
	if isNull(raw) {
		return unsupportedf(reasonSpec, "config.json has no linux section")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return unsupportedf(reasonSpec, "config.json linux: %v", err)
	}
	for k, v := range fields {
		switch {
		case !slices.Contains(knownLinux, k):
			return unsupportedf(reasonSpec, "config.json linux has an unknown field %q", k)
		case (k == "intelRdt" || k == "memoryPolicy" || k == "personality") && !isNull(v):
			return unsupportedf(reasonSpec, "config.json linux.%s is set", k)
		}
	}
	if err := strictIfSet(fields["cgroupsPath"], &l.CgroupsPath); err != nil {
		return unsupportedf(reasonSpec, "config.json linux.cgroupsPath: %v", err)
	}
	if err := strictIfSet(fields["namespaces"], &l.Namespaces); err != nil {
		return unsupportedf(reasonSpec, "config.json linux.namespaces: %v", err)
	}
	for _, ns := range l.Namespaces {
		if !slices.Contains(namespaceTypes, ns.Type) {
			return unsupportedf(reasonNamespace, "namespace type %q", ns.Type)
		}
	}
	if !isNull(fields["seccomp"]) {
		l.Seccomp = &specs.LinuxSeccomp{}
		if err := strict(fields["seccomp"], l.Seccomp); err != nil {
			return unsupportedf(reasonSeccomp, "config.json linux.seccomp: %v", err)
		}
	}
	return nil
}

// namespaceTypes are the OCI namespace types runtime-spec v1.3 defines;
// the helper joins each of them.
var namespaceTypes = []specs.LinuxNamespaceType{
	specs.PIDNamespace, specs.NetworkNamespace, specs.MountNamespace, specs.IPCNamespace,
	specs.UTSNamespace, specs.UserNamespace, specs.CgroupNamespace, specs.TimeNamespace,
}

// checkProcess refuses what the helper does not apply the way runc does.
func checkProcess(p *specs.Process) error {
	switch {
	case p.SelinuxLabel != "":
		// Not shown on a kernel with SELinux enforcing (README "Direct
		// exec probes"): those containers keep the runtime.
		return unsupportedf(reasonLSM, "SELinux label %q", p.SelinuxLabel)
	case p.Scheduler != nil:
		return unsupportedf(reasonProcess, "process.scheduler is set")
	case p.IOPriority != nil:
		return unsupportedf(reasonProcess, "process.ioPriority is set")
	case p.ExecCPUAffinity != nil:
		return unsupportedf(reasonProcess, "process.execCPUAffinity is set")
	case p.User.Username != "":
		return unsupportedf(reasonProcess, "process.user.username is set")
	case p.Capabilities == nil:
		// runc would leave the exec with its own capabilities.
		return unsupportedf(reasonProcess, "process.capabilities is not set")
	case p.Cwd == "":
		return unsupportedf(reasonProcess, "process.cwd is empty")
	}
	for _, rl := range p.Rlimits {
		if _, ok := rlimits[rl.Type]; !ok {
			return unsupportedf(reasonProcess, "rlimit %q", rl.Type)
		}
	}
	return nil
}

// strict decodes raw into v, refusing unknown fields.
func strict(raw json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

func strictIfSet(raw json.RawMessage, v any) error {
	if isNull(raw) {
		return nil
	}
	return strict(raw, v)
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

// rlimits are the RLIMIT_* resources of Linux by their OCI names.
var rlimits = map[string]uint32{
	"RLIMIT_CPU": 0, "RLIMIT_FSIZE": 1, "RLIMIT_DATA": 2, "RLIMIT_STACK": 3,
	"RLIMIT_CORE": 4, "RLIMIT_RSS": 5, "RLIMIT_NPROC": 6, "RLIMIT_NOFILE": 7,
	"RLIMIT_MEMLOCK": 8, "RLIMIT_AS": 9, "RLIMIT_LOCKS": 10, "RLIMIT_SIGPENDING": 11,
	"RLIMIT_MSGQUEUE": 12, "RLIMIT_NICE": 13, "RLIMIT_RTPRIO": 14, "RLIMIT_RTTIME": 15,
}

// capabilities are the Linux capabilities by name and number.
var capabilities = map[string]uint{
	"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_FOWNER": 3,
	"CAP_FSETID": 4, "CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8,
	"CAP_LINUX_IMMUTABLE": 9, "CAP_NET_BIND_SERVICE": 10, "CAP_NET_BROADCAST": 11,
	"CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13, "CAP_IPC_LOCK": 14, "CAP_IPC_OWNER": 15,
	"CAP_SYS_MODULE": 16, "CAP_SYS_RAWIO": 17, "CAP_SYS_CHROOT": 18, "CAP_SYS_PTRACE": 19,
	"CAP_SYS_PACCT": 20, "CAP_SYS_ADMIN": 21, "CAP_SYS_BOOT": 22, "CAP_SYS_NICE": 23,
	"CAP_SYS_RESOURCE": 24, "CAP_SYS_TIME": 25, "CAP_SYS_TTY_CONFIG": 26, "CAP_MKNOD": 27,
	"CAP_LEASE": 28, "CAP_AUDIT_WRITE": 29, "CAP_AUDIT_CONTROL": 30, "CAP_SETFCAP": 31,
	"CAP_MAC_OVERRIDE": 32, "CAP_MAC_ADMIN": 33, "CAP_SYSLOG": 34, "CAP_WAKE_ALARM": 35,
	"CAP_BLOCK_SUSPEND": 36, "CAP_AUDIT_READ": 37, "CAP_PERFMON": 38, "CAP_BPF": 39,
	"CAP_CHECKPOINT_RESTORE": 40,
}

// capMask is the set of the named capabilities the kernel has (up to
// lastCap). Like runc, it ignores names it does not know: that grants
// less, never more.
func capMask(names []string, lastCap uint) uint64 {
	var m uint64
	for _, n := range names {
		if c, ok := capabilities[n]; ok && c <= lastCap {
			m |= 1 << c
		}
	}
	return m
}

// prepareEnv is runc's prepareEnv: of duplicate keys the last occurrence
// wins (the survivors keep their order), an empty HOME is dropped, and home
// reports whether HOME must come from the container's /etc/passwd.
func prepareEnv(env []string) (out []string, home bool, err error) {
	seen := make(map[string]bool, len(env))
	homeSet := false
	for i := len(env) - 1; i >= 0; i-- {
		kv := env[i]
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
			return nil, false, fmt.Errorf("invalid environment variable: missing '='")
		case k == "":
			return nil, false, fmt.Errorf("invalid environment variable: name cannot be empty")
		case seen[k]:
			continue
		}
		seen[k] = true
		if strings.IndexByte(kv, 0) >= 0 {
			return nil, false, fmt.Errorf("invalid environment variable %q: contains nul byte (\\x00)", k)
		}
		if k == "HOME" {
			if v == "" {
				continue
			}
			homeSet = true
		}
		out = append(out, kv)
	}
	slices.Reverse(out)
	return out, !homeSet, nil
}
