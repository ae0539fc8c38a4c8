package agent

import (
	"go.uber.org/zap"

	"github.com/probelet/probelet/cri/server"
	"github.com/probelet/probelet/internal/version"
	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/prober"
)

// The CRI-style server plugs in as it is.
var _ SocketServer = (*server.Server)(nil)

// defaultSocketServer serves --listen with cri/server: read-only CRI for
// crictl plus probelet's own API for probectl.
func defaultSocketServer(status prober.StatusSource, view lifecycle.View, nri server.NRIStatus, tcp func() server.TCPStatus, past []prober.Event, log *zap.Logger) (SocketServer, error) {
	return server.New(status, view, server.WithNRIStatus(nri), server.WithTCPStatus(tcp), server.WithLogger(log), server.WithVersion(version.Version), server.WithPastEvents(past))
}
