package deploy_test

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	nri "github.com/containerd/nri/pkg/adaptation"
	nriapi "github.com/containerd/nri/pkg/api"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Paths inside the image (see Dockerfile).
const (
	installerName   = "probelet-nri-installer"
	installerBinary = "/usr/local/bin/probelet-nri-install"
	daemonBinary    = "/usr/local/bin/probelet"
)

// checkInstaller checks the pre-installed variant's installer DaemonSet:
// no privileges, and paths that land where containerd's NRI looks.
func checkInstaller(ds *appsv1.DaemonSet, configMaps map[string]*corev1.ConfigMap) error {
	pod := &ds.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		return fmt.Errorf("want one container, have %d", len(pod.Containers))
	}
	c := &pod.Containers[0]
	errs := checkInstallerSecurity(pod, c)
	if !slices.Equal(c.Command, []string{installerBinary}) {
		errs = append(errs, fmt.Errorf("command %q, want [%s]", c.Command, installerBinary))
	}
	args, err := installerArgs(c.Args)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs, checkInstallerPaths(pod, c, args)...)
	errs = append(errs, checkInstallerConfig(pod, c, args["--config"], configMaps))
	return errors.Join(errs...)
}

// installerArgs reads probelet-nri-install's --flag=value and --wait.
func installerArgs(args []string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range args {
		name, value, _ := strings.Cut(a, "=")
		out[name] = value
	}
	var errs []error
	if _, ok := out["--wait"]; !ok {
		errs = append(errs, errors.New("--wait missing: the pod would exit and restart forever"))
	}
	if out["--binary"] != daemonBinary {
		errs = append(errs, fmt.Errorf("--binary %q, want %s", out["--binary"], daemonBinary))
	}
	if err := nriapi.CheckPluginIndex(out["--index"]); err != nil {
		errs = append(errs, fmt.Errorf("--index: %w", err))
	}
	if out["--name"] != "probelet" {
		errs = append(errs, fmt.Errorf("--name %q, want probelet", out["--name"]))
	}
	return out, errors.Join(errs...)
}

func checkInstallerSecurity(pod *corev1.PodSpec, c *corev1.Container) []error {
	errs := checkPodSecurity(pod)
	sc := c.SecurityContext
	switch {
	case sc == nil || sc.Capabilities == nil:
		return append(errs, errors.New("container securityContext.capabilities missing"))
	case !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		errs = append(errs, fmt.Errorf("capabilities drop %v add %v, want drop [ALL] and nothing added", sc.Capabilities.Drop, sc.Capabilities.Add))
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		errs = append(errs, errors.New("allowPrivilegeEscalation must be false"))
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		errs = append(errs, errors.New("readOnlyRootFilesystem must be true"))
	}
	if pod.HostPID || pod.HostNetwork {
		errs = append(errs, errors.New("the installer needs no host namespaces"))
	}
	return errs
}

// checkInstallerPaths: the plugin and config directories map to NRI's
// defaults on the host, and the plugin directory's parent (the staging
// directory) is on the same mount.
func checkInstallerPaths(pod *corev1.PodSpec, c *corev1.Container, args map[string]string) []error {
	var errs []error
	for flag, want := range map[string]string{
		"--plugin-dir": nri.DefaultPluginPath,
		"--config-dir": nri.DefaultPluginConfigPath,
	} {
		dir := args[flag]
		host, m := hostPathOf(pod, c, dir)
		switch {
		case host != want:
			errs = append(errs, fmt.Errorf("%s %q is host path %q, want %s", flag, dir, host, want))
		case m.ReadOnly:
			errs = append(errs, fmt.Errorf("%s %q is read-only", flag, dir))
		}
	}
	_, plugins := hostPathOf(pod, c, args["--plugin-dir"])
	if _, staging := hostPathOf(pod, c, path.Dir(args["--plugin-dir"])); staging == nil || staging != plugins {
		errs = append(errs, errors.New("--plugin-dir's parent must be on the same mount: the executable is staged there"))
	}
	return errs
}

// hostPathOf maps a container path to its host path through a hostPath
// mount, returning "" when none holds it.
func hostPathOf(pod *corev1.PodSpec, c *corev1.Container, p string) (string, *corev1.VolumeMount) {
	for i, m := range c.VolumeMounts {
		rest, ok := strings.CutPrefix(p, m.MountPath)
		if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.HostPath != nil {
				return v.HostPath.Path + rest, &c.VolumeMounts[i]
			}
		}
	}
	return "", nil
}

// checkInstallerConfig: --config is a key of a ConfigMap in the rendering,
// and its content is a valid plugin configuration.
func checkInstallerConfig(pod *corev1.PodSpec, c *corev1.Container, file string, configMaps map[string]*corev1.ConfigMap) error {
	for _, m := range c.VolumeMounts {
		key, ok := strings.CutPrefix(file, m.MountPath+"/")
		if !ok {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			cm := configMaps[v.ConfigMap.Name]
			if cm == nil {
				return fmt.Errorf("--config: ConfigMap %s is not in the rendering", v.ConfigMap.Name)
			}
			if err := checkPluginConf(cm.Data[key]); err != nil {
				return fmt.Errorf("ConfigMap %s key %s: %w", cm.Name, key, err)
			}
			return nil
		}
	}
	return fmt.Errorf("--config %q is not in a mounted ConfigMap", file)
}

// checkPluginConf checks the pre-installed plugin's configuration: daemon
// flags, one per line, '#' comments. --nri-socket makes no sense there
// (containerd passes a pre-connected socket).
func checkPluginConf(content string) error {
	var args []string
	for line := range strings.Lines(content) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			args = append(args, line)
		}
	}
	flags, err := parseFlags(args)
	if err != nil {
		return err
	}
	if _, ok := flags["--nri-socket"]; ok {
		return errors.New("--nri-socket set: a pre-installed plugin gets its socket from containerd")
	}
	for _, f := range []string{"--runtime-endpoint", "--listen"} {
		if flags[f] == "" {
			return fmt.Errorf("%s is not set", f)
		}
	}
	return nil
}

// checkCommon checks what every rendering shares: the namespace admits the
// privileged agent and the service account carries no token.
func checkCommon(objs *objects) error {
	var errs []error
	ns := objs.namespaces[namespace]
	if ns == nil {
		return fmt.Errorf("namespace %s missing", namespace)
	}
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		errs = append(errs, fmt.Errorf("namespace %s: Pod Security must enforce privileged, or the agent is rejected", namespace))
	}
	sa := objs.serviceAccounts[agentName]
	if sa == nil || sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		errs = append(errs, errors.New("service account probelet must exist without a token"))
	}
	for name, ds := range objs.daemonSets {
		if ds.Spec.Template.Spec.ServiceAccountName != agentName || ds.Namespace != namespace {
			errs = append(errs, fmt.Errorf("DaemonSet %s must run as %s/%s", name, namespace, agentName))
		}
	}
	return errors.Join(errs...)
}
