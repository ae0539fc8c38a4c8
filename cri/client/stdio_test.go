package client_test

import (
	"path/filepath"
	"testing"

	"github.com/probelet/probelet/cri/client"
	"github.com/probelet/probelet/internal/quietio"
)

// Under --io=std ExecSync goes through grpc-go like every other call: no
// connections of its own (the gauge of them is not even made).
func TestStdIOSendsExecSyncThroughGRPCGo(t *testing.T) {
	t.Cleanup(func() { _ = quietio.Set(quietio.Quiet) })
	for _, mode := range []string{quietio.Quiet, quietio.Std} {
		_ = quietio.Set(mode)
		c, err := client.New("unix://" + filepath.Join(t.TempDir(), "containerd.sock"))
		if err != nil {
			t.Fatal(err)
		}
		if own := len(c.Collectors()) > 0; own != (mode == quietio.Quiet) {
			t.Errorf("--io=%s: ExecSync on connections of its own: %v", mode, own)
		}
		_ = c.Close()
	}
}
