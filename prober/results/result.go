// Package results holds published probe results and the cache that emits an
// update only when a container's published result changes.
package results

// Result is a published probe result, the value the kubelet keeps per
// container and probe type.
type Result int8

const (
	// Unknown is the startup probe's seed and the value of a stopped worker.
	Unknown Result = iota - 1
	// Success is the liveness seed.
	Success
	// Failure is the readiness seed.
	Failure
)

// String returns "Success", "Failure" or "UNKNOWN", the kubelet's
// results.Result spelling, for logs and human output. JSON uses Name.
func (r Result) String() string {
	if r != Success && r != Failure {
		return "UNKNOWN"
	}
	return r.Name()
}

// Name returns "Success", "Failure" or "Unknown": the result's value in
// probelet's JSON (probectl -o json, crictl inspect's info), a contract
// that String's kubelet spelling must not change.
func (r Result) Name() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	}
	return "Unknown"
}
