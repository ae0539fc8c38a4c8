//go:build e2e

package testbed_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/probelet/probelet/internal/testbed"
)

// TestStopAfterContainerdCrash: with containerd killed, nobody removes the
// pod the normal way; Stop must still kill the shim and the containers and
// remove everything, the shim's socket included.
func TestStopAfterContainerdCrash(t *testing.T) {
	bed := testbed.Start(t)
	podID, ctrID := runWeb(t, bed)
	st, err := bed.ContainerState(ctrID)
	if err != nil || st.Pid == 0 {
		t.Fatalf("container: %+v, %v", st, err)
	}
	// containerd names a pod's shim socket by sha256(address/namespace/pod ID).
	sum := sha256.Sum256([]byte(filepath.Join(bed.Dir(), "containerd.sock", "k8s.io", podID)))
	shimSocket := fmt.Sprintf("/run/containerd/s/%x", sum)
	if _, err := os.Stat(shimSocket); err != nil {
		t.Fatalf("shim socket of pod %s: %v", podID, err)
	}
	if err := bed.StopRuntime(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := bed.Stop(); err != nil {
		t.Fatal(err)
	}
	checkNoTrace(t, bed, []int{st.Pid})
	if _, err := os.Stat(shimSocket); err == nil {
		t.Errorf("shim socket %s left behind", shimSocket)
	}
}
