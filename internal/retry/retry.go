// Package retry is the one reconnect back-off probelet uses (NRI
// registration, the runtime's event stream): apimachinery's wait.Backoff,
// doubling and capped, with jitter so that retries do not fall in step.
package retry

import (
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Jitter is the share a wait may be lengthened by at random: a wait of d
// lasts between d and d*(1+Jitter).
const Jitter = 0.2

// Backoff returns a back-off that starts at first and doubles up to limit
// (each wait then jittered by Jitter). Call Step for each wait; start over
// with a new one after a success.
func Backoff(first, limit time.Duration) *wait.Backoff {
	return &wait.Backoff{Duration: first, Factor: 2, Jitter: Jitter, Steps: math.MaxInt32, Cap: limit}
}
