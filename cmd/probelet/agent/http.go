package agent

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// handler serves /metrics and /healthz. /healthz is 200 while the NRI
// plugin is registered (probelet learns about containers) and 503
// otherwise, so a DaemonSet liveness probe restarts a stuck agent.
func (a *Agent) handler(p *parts) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{Registry: a.reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !p.plugin.Connected() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "NRI not connected (%s)\n", a.cfg.NRISocket)
			return
		}
		name, version := p.plugin.Runtime()
		fmt.Fprintf(w, "ok: NRI connected to %s %s\n", name, version)
	})
	return mux
}
