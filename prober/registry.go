package prober

import "github.com/probelet/probelet/prober/results"

// registry is what the engine knows of the node's pods: their entries (by
// UID, and by container ID), each with the probes it was created with and
// its workers, and the published results; and the answers read from them
// (status.go: a container's status, readiness, the liveness census). It
// has no lock of its own — the Manager's lock guards it — and it calls
// nothing: no scheduler, no kill, no I/O.
type registry struct {
	pods  map[string]*podEntry
	byID  map[string]*podEntry
	cache *results.Cache
}

func newRegistry() registry {
	return registry{pods: make(map[string]*podEntry), byID: make(map[string]*podEntry), cache: results.NewCache()}
}
