// Package podnet opens probe sockets inside a pod's own network namespace
// (--probe-origin pod, or a pod's probelet.io/probe-origin: pod), so an
// HTTP, gRPC or TCP-dial probe reaches the app the way the pod's own
// processes do, whatever a CNI or a policy does to traffic from the node.
//
// A pod's namespace is pinned once (Pins.Open): the file the runtime named
// is opened, checked to be a network namespace that is neither the node's
// nor another sandbox's, and held open, so nothing renamed, mounted over
// or replaced afterwards changes where its probes come from. A socket is
// made by entering the namespace on the caller's thread, locked to it for
// the socket call alone (Namespace.Socket); connecting, reading and writing
// happen on any thread, as for every other probe. A namespace released
// (its pod gone) answers ErrGone, a prober error, never a probe Failure.
package podnet
