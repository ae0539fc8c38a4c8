// Package convert moves the kubelet probes of Kubernetes manifests into
// probelet's pod annotation: each container's livenessProbe, readinessProbe
// and startupProbe of a Pod or a workload's pod template goes into the
// template's probelet.io/probes annotation (compact JSON, containers sorted,
// the fields of k8s.io/api/core/v1.Probe in their API order), and a template
// whose annotation then declares a readiness probe gets the probelet.io/ready
// readiness gate.
//
// Nothing else changes: documents without a probe to move are returned byte
// for byte; in the others comments, key order, quoting, blank lines and
// indentation are kept (the document is edited as a YAML node tree with
// kyaml, re-encoded, and every line the edit did not touch is put back as
// it was written; JSON documents are written back in their own indentation).
// Converting a converted manifest changes nothing.
//
// Rules:
//   - Containers and restartable init containers (restartPolicy: Always,
//     sidecars) have their probes moved. Plain init containers may not have
//     probes (the API server rejects them): such a document is an error and
//     is left alone.
//   - An annotation already present is merged: a probe the annotation
//     already has for the container is dropped from the spec when it is the
//     same probe, and is an error when it differs.
//   - The result must pass spec.Check (what `probelet validate` and the
//     daemon apply): a named port that does not resolve, an invalid probe,
//     ... are errors naming the document, object and field.
//
// Kinds: Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob,
// PodTemplate, ReplicationController, and List (or any *List) of them.
// Other kinds are left alone.
package convert
