//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// kind is one kind of probe.
type kind string

const (
	kindNone kind = "none" // the baseline: the same pods without probes
	kindTCP  kind = "tcp"
	kindHTTP kind = "http"
	kindGRPC kind = "grpc"
	kindExec kind = "exec"
)

func parseKind(s string) (kind, error) {
	switch k := kind(s); k {
	case kindTCP, kindHTTP, kindGRPC, kindExec:
		return k, nil
	}
	return "", fmt.Errorf("-kinds: unknown probe kind %q (tcp, http, grpc, exec)", s)
}

// The app's ports (app.go) and where its binary is mounted in the pods.
const (
	tcpPort  = 8080
	httpPort = 8081
	grpcPort = 8082
	appMount = "/bench"
	appName  = "app"
)

// probeOf is the readiness probe of kind k: period 1 s, the defaults
// otherwise (timeout 1 s, thresholds 1 and 3), the same for both agents.
func probeOf(k kind) *corev1.Probe {
	p := &corev1.Probe{PeriodSeconds: 1}
	switch k {
	case kindTCP:
		p.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(tcpPort)}
	case kindHTTP:
		p.HTTPGet = &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(httpPort)}
	case kindGRPC:
		p.GRPC = &corev1.GRPCAction{Port: grpcPort}
	case kindExec:
		p.Exec = &corev1.ExecAction{Command: []string{"true"}}
	default:
		return nil
	}
	return p
}

// podName is the static pod's manifest name; the kubelet names the pod
// NAME-NODENAME.
func podName(i int) string { return fmt.Sprintf("nb-%03d", i) }

// manifest is static pod i: the bench app in busybox, with the probe of
// kind k as the kubelet's readiness probe and in probelet's annotation.
func manifest(i int, k kind, appDir string) ([]byte, error) {
	grace := int64(1)
	pod := corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: podName(i), Namespace: "default"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name:            "app",
				Image:           testbed.BusyboxImage,
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{appMount + "/" + appName, appArg},
				VolumeMounts:    []corev1.VolumeMount{{Name: "bench", MountPath: appMount, ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "bench", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: appDir},
			}}},
		},
	}
	if p := probeOf(k); p != nil {
		pod.Spec.Containers[0].ReadinessProbe = p
		anno, err := json.Marshal(probespec.PodProbes{"app": {Readiness: p}})
		if err != nil {
			return nil, err
		}
		pod.Annotations = map[string]string{probespec.AnnotationProbes: string(anno)}
	}
	return yaml.Marshal(pod)
}

// writeManifests replaces the kubelet's static pods with n pods of kind k.
func writeManifests(dir string, n int, k kind, appDir string) error {
	old, err := filepath.Glob(filepath.Join(dir, "nb-*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	for i := range n {
		data, err := manifest(i, k, appDir)
		if err != nil {
			return err
		}
		tmp := filepath.Join(dir, "."+podName(i)+".tmp")
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, podName(i)+".yaml")); err != nil {
			return err
		}
	}
	return nil
}
