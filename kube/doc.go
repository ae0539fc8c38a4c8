// Package kube is probelet's API server side: what it reads (pod specs of
// this node: kube/podwatch) and what it writes (the probelet.io/ready pod
// condition: kube/readiness; kubelet-style Events: kube/events). All of it
// is optional: without a kubeconfig or an in-cluster configuration
// probelet runs node-only. This package makes the client: a narrow one
// (client.go), not client-go's clientset.
package kube
