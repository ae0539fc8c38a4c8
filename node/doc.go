// Package node is the shared vocabulary of probelet's rooms: the pods and
// containers of this node as the runtime reports them, their states, and
// the lifecycle events derived from their changes. It holds data and small
// helpers only and imports no other probelet package (only k8s.io/api's
// types for what the API server adds), so every room
// (plugin, lifecycle, prober, cri, kube) can speak it without depending on
// another room.
package node
