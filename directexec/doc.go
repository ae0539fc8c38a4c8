// Package directexec runs exec probes without the container runtime: a
// small static helper (helper/probelet-exec.c, built by
// hack/build-exec-helper.sh) enters the container's namespaces and cgroups
// and applies its rlimits, user, groups, capabilities, no_new_privs,
// AppArmor profile, seccomp filter, environment and working directory —
// read from the OCI
// bundle (config.json) the runtime itself used, in runc exec's order — and
// execs the command. It costs a process start-up where CRI ExecSync costs
// containerd, the shim and two runc start-ups.
//
// It never confines less than the runtime: whatever it does not understand
// about a container (another runtime than runc, an unknown namespace or
// field, an SELinux label, a seccomp notify action, a cgroup it cannot find,
// an AppArmor profile the kernel refuses)
// sends that container's probes through the runtime's ExecSync instead,
// logged once per container and counted by reason.
package directexec
