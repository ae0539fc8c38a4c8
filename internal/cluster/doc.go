// Package cluster starts a private, real Kubernetes control plane (etcd,
// kube-apiserver, kube-controller-manager) on loopback and real kubelets on
// containerd test beds (internal/testbed), for end-to-end tests. The
// scripts in hack/cluster do the work; the binaries are built once from
// the Go module proxy and cached by version.
//
//	c := cluster.Start(t)
//	bed := testbed.Start(t)
//	k := c.StartKubelet(t, bed)
//	pod, err := c.Client().CoreV1().Pods("default").Create(ctx, podOn(k.NodeName()), metav1.CreateOptions{})
//
// There is no scheduler: pods name their node (spec.nodeName). A kubelet
// without a control plane (StartStandaloneKubelet) runs static pods from
// its manifest directory and serves /pods and /metrics on its read-only port.
//
// Policy, the harness's (internal/testbed/harness, shared with
// internal/testbed): everything needs root. Without root a test
// is skipped, unless CI is set or PROBELET_E2E=1: then, as whenever a start
// fails, the test fails with the reason. PROBELET_TESTBED_KEEP=1 keeps a
// failed test's directories for inspection (the log says how to remove them).
package cluster
