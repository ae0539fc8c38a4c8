package probespec

// Type is the kind of probe: liveness, readiness or startup.
type Type int

const (
	// Liveness restarts the container when it fails.
	Liveness Type = iota
	// Readiness gates the pod's Ready condition.
	Readiness
	// Startup gates liveness and readiness until the app has started.
	Startup
)

// Types lists every probe type in a stable order.
var Types = [...]Type{Liveness, Readiness, Startup}

// String returns the kubelet's spelling ("Liveness", "Readiness", "Startup"),
// used in events, logs and the probe_type metric label.
func (t Type) String() string {
	switch t {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	case Startup:
		return "Startup"
	}
	return "Unknown"
}

// Key returns the lower-case key used in JSON output ("liveness", ...).
func (t Type) Key() string {
	switch t {
	case Liveness:
		return "liveness"
	case Readiness:
		return "readiness"
	case Startup:
		return "startup"
	}
	return "unknown"
}
