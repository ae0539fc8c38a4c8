package client_test

import (
	"path/filepath"
	"testing"

	"github.com/probelet/probelet/cri/client"
	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/quietio"
)

// Under --io=std ExecSync goes through grpc-go like every other call: no
// connections of its own (the gauge of them is not even made).
func TestStdIOSendsExecSyncThroughGRPCGo(t *testing.T) {
	testutil.EachIOMode(t, func(mode string) {
		c, err := client.New("unix://" + filepath.Join(t.TempDir(), "containerd.sock"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if own := len(c.Collectors()) > 0; own != (mode == quietio.Quiet) {
			t.Errorf("--io=%s: ExecSync on connections of its own: %v", mode, own)
		}
	})
}
