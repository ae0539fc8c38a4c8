// Package testbed starts a private, real containerd (with CRI, NRI and a CNI
// bridge) for end-to-end tests, built and run by the scripts in hack/testbed.
//
// A test calls Start, which builds what is missing (cached across runs),
// starts containerd in a fresh short directory under /tmp and registers its
// teardown with t.Cleanup. The Bed then runs pods through crictl:
//
//	bed := testbed.Start(t)
//	podID, ctrID, err := bed.RunPod(testbed.PodSpec{
//		Name: "web",
//		Annotations: map[string]string{"probelet.io/probes": `{"web": {...}}`},
//		Container: testbed.ContainerSpec{Name: "web", Command: []string{"httpd", "-f", "-p", "8080", "-h", "/var/www"}},
//	})
//
// Policy, the harness's (package harness, which internal/cluster shares):
// the bed needs root. Without root a test is skipped, unless the
// environment says the end-to-end tests must run (CI set, or
// PROBELET_E2E=1): then, as whenever the bed fails to start, the test fails
// with the reason. Set PROBELET_TESTBED_KEEP=1 to keep a failed test's bed
// for inspection (the log says how to remove it).
package testbed
