// Package server serves probelet's state on a local unix socket: a read-only
// CRI runtime.v1 RuntimeService (and the ImageService subset crictl needs),
// so unmodified crictl can list pods and containers and inspect their probe
// state, probelet's own probelet.v1alpha1 API for probectl, and the gRPC
// health service.
//
// Data comes from two sources that never block: the prober's StatusSource
// (probe state, result changes, probe events) and the lifecycle View (pods,
// containers, lifecycle events). Streams relay subscriptions through a
// bounded queue; a client that stops reading is disconnected and its
// subscription cancelled, so a stuck client can never slow probing down.
package server
