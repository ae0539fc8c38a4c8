package agent

import (
	"context"

	"github.com/probelet/probelet/cri/client"
	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/prober"
)

// The engine takes the node cache's pod snapshots.
var _ lifecycle.Sink = (*prober.Manager)(nil)

// criKiller kills through CRI: StopIfRunning asks containerd, then the
// kernel, whether the instance still runs before it stops it.
type criKiller struct{ cri *client.Client }

var _ prober.ContainerKiller = criKiller{}

// KillContainer implements prober.ContainerKiller.
func (k criKiller) KillContainer(ctx context.Context, kill prober.Kill) error {
	return k.cri.StopIfRunning(ctx, client.Stop{
		ContainerID: kill.ContainerID, GracePeriod: kill.GracePeriod, Reason: kill.Reason,
		Pid: kill.Pid, SandboxPid: kill.SandboxPid, Issuing: kill.Issuing,
	})
}
