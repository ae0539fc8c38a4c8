package agent

import (
	"errors"
	"fmt"
)

// The daemon's CRI proxy flags are refused: the proxy runs in a process of
// its own (`probelet cri-proxy`), so that nothing the prober parses can cut
// the kubelet from its runtime. The errors say what to run instead.

func (c Config) validateProxyListen() error {
	if c.CRIProxyListen == "" {
		return nil
	}
	return fmt.Errorf("the CRI proxy runs as its own process now: run `probelet cri-proxy --listen %s --runtime-endpoint %s` "+
		"(deploy/systemd/probelet-cri-proxy.service) and drop criProxyListen from probelet's configuration",
		c.CRIProxyListen, c.RuntimeEndpoint)
}

func (c Config) validateProxyVerify() error {
	if !c.CRIProxyVerify {
		return nil
	}
	return errors.New("the CRI proxy runs as its own process now: its shadow mode is `probelet cri-proxy --verify`; " +
		"drop criProxyVerify from probelet's configuration")
}
