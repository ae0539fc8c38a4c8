package probespec

import (
	"fmt"
	"time"
)

// LeaseRenewInterval is how often a node agent renews its Lease unless
// --lease-renew-interval says otherwise: the kubelet's node Lease period.
// The agent renews at it and probelet-controller judges by it, so both
// take the default and the bounds from here.
const LeaseRenewInterval = 10 * time.Second

// CheckLeaseRenewInterval is both sides' check of --lease-renew-interval:
// at least a second (more often is load, not news) and at most 5 minutes
// (the grace period must exceed it).
func CheckLeaseRenewInterval(d time.Duration) error {
	if d < time.Second || d > 5*time.Minute {
		return fmt.Errorf("%s is not between 1s and 5m", d)
	}
	return nil
}
