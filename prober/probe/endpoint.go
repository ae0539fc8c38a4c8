package probe

import (
	"errors"
	"fmt"
	"time"
)

// CheckEndpoint reports why a network probe's resolved target cannot be
// probed: an empty host, a port outside 1-65535 or a timeout that is not
// positive. kind ("http", "tcp", "grpc") names the prober in the error.
func CheckEndpoint(kind, host string, port int, timeout time.Duration) error {
	switch {
	case host == "":
		return errors.New(kind + " probe: empty host")
	case port < 1 || port > 65535:
		return fmt.Errorf("%s probe: port %d out of range 1-65535", kind, port)
	case timeout <= 0:
		return fmt.Errorf("%s probe: timeout %v must be positive", kind, timeout)
	}
	return nil
}
