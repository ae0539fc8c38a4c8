package node

import "errors"

// ErrNotRunning says a container does not run (any more) — it exited on
// its own or is gone — so nothing was done to it. A kill that finds its
// container so is not issued: no stop, no Killing event, no restart
// recorded, as the kubelet acts on a liveness failure only for a
// container that still runs.
var ErrNotRunning = errors.New("container is not running")
