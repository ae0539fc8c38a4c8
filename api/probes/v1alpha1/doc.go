// Package v1alpha1 is the probe-state API, probes.probelet.io/v1alpha1:
// one read-only, namespaced PodProbes per pod, named after it, holding
// what the pod's node's probelet knows of its containers' probes — the
// spec as run, the results against the thresholds, the last runs with
// their outputs, the restarts it issued, why a kill waits, and the
// explanation `probectl why` prints. probelet-controller serves it through
// an APIService, fetching each answer from the nodes; nothing of it is
// stored in etcd.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +groupName=probes.probelet.io
package v1alpha1
