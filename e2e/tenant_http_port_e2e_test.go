//go:build e2e

package e2e_test

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/httpserve"
	"github.com/probelet/probelet/internal/testbed"
)

// What internal/httpserve lets a connection hold, at most: a request's
// whole read (its header sooner); and a second for the node's load.
var slowClientBound = max(httpserve.DefaultLimits.ReadHeader, httpserve.DefaultLimits.Read) + time.Second

// slowKinds are grpc-health's slow clients (its slowclients.go): a header
// trickled a line a second, a body promised and trickled, and nothing at
// all.
var slowKinds = []string{"body", "header", "idle"}

// TestTenantSlowClientsHoldNoHTTPPort (issue 41): probelet's metrics port
// bound where pods reach it (the bed's bridge address, as a host-network
// agent's is with --metrics-bind-address=:9809), and a hostile pod holding
// 30 connections of each slow kind to it, each reopened as soon as it
// ends, for the attack's hold. The server ends every one within its bounds
// (the attacker's own account of each connection's life: a trickled or
// idle header is cut at 5 s; /metrics answers a promised body without
// reading it, so that kind becomes a flood of connections), a
// well-behaved scrape from the node is answered within a second
// throughout, and the victim's probes stay on time.
func TestTenantSlowClientsHoldNoHTTPPort(t *testing.T) {
	const perKind = 30
	bed := testbed.Start(t)
	// The bridge has its address once a pod is on it; probelet finds the
	// victim already running when it starts.
	victim := victimApp(t, bed, webApp)
	gw := bridgeIPv4(t, bed)
	d := startProbelet(t, bed, "--metrics-bind-address", net.JoinHostPort(gw, "0"))
	host, _, err := net.SplitHostPort(d.metrics)
	if err != nil || host != gw {
		t.Fatalf("metrics served at %q, want the bridge's %s", d.metrics, gw)
	}
	waitReady(t, d, victim, true, "")

	// Each connection's life, as the attacker sees it: "held MS KIND"
	// when the server closed it.
	hostile := runApp(t, bed, appSpec{name: "slow-clients",
		cmd: shell(fmt.Sprintf(`trap "exit 0" TERM; grpc-health -slow-clients %s -per-kind %d & wait`, d.metrics, perKind))})

	scrapes, slowest := 0, time.Duration(0)
	client := http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	holdsUnderAttack(t, d, victim, func() (bool, string) {
		start := time.Now()
		resp, err := client.Get("http://" + d.metrics + "/metrics")
		if err != nil {
			return false, "a scrape from the node: " + err.Error()
		}
		_ = resp.Body.Close()
		scrapes++
		slowest = max(slowest, time.Since(start))
		return resp.StatusCode == http.StatusOK, resp.Status
	})

	logs, err := bed.Crictl("logs", hostile.ctr)
	if err != nil {
		t.Fatalf("the attacker's log: %v", err)
	}
	held := map[string][]time.Duration{}
	for line := range strings.Lines(string(logs)) {
		var ms int64
		var kind string
		if _, err := fmt.Sscanf(line, "held %d %s", &ms, &kind); err == nil {
			held[kind] = append(held[kind], time.Duration(ms)*time.Millisecond)
		}
	}
	for _, kind := range slowKinds {
		lives := held[kind]
		if len(lives) < perKind {
			t.Errorf("%s: %d connections ended in %v, want each of the %d ended at least once", kind, len(lives), attackHold, perKind)
			continue
		}
		if longest := slices.Max(lives); longest > slowClientBound {
			t.Errorf("%s: a connection held for %v, over %v", kind, longest, slowClientBound)
		}
		t.Logf("%-6s %d connections ended, held %v to %v", kind, len(lives), slices.Min(lives), slices.Max(lives))
	}
	t.Logf("%d scrapes from the node during the attack, the slowest %v", scrapes, slowest.Round(time.Millisecond))
}
