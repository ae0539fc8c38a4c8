package probe

import (
	"fmt"
	"time"
)

// CheckEndpoint reports why a network probe's resolved target cannot be
// probed: a port outside 1-65535 or a timeout that is not positive. kind
// ("http", "tcp", "grpc") names the prober in the error. An empty host is
// valid: a pod without an IP makes the kubelet dial ":port", which reaches
// the node's own addresses, and the probe fails (or not) with the dial's
// answer.
func CheckEndpoint(kind, host string, port int, timeout time.Duration) error {
	switch {
	case port < 1 || port > 65535:
		return fmt.Errorf("%s probe: port %d out of range 1-65535", kind, port)
	case timeout <= 0:
		return fmt.Errorf("%s probe: timeout %v must be positive", kind, timeout)
	}
	return nil
}
