package listeners

// Verdict is what a connect to (namespace, address, port) would do, as far
// as the listener table can tell.
type Verdict uint8

const (
	// Unverified: the namespace's listeners were never confirmed, so a
	// missing listener proves nothing. Verify the namespace or dial.
	Unverified Verdict = iota
	// Undecided: only a real dial can tell (a device-bound listener, a
	// listen() whose port is not known yet, a partly full SO_REUSEPORT group).
	Undecided
	// Reachable: a listener accepts the connection; the handshake completes.
	Reachable
	// Refused: no listener accepts it; the kernel answers with a RST.
	Refused
	// QueueFull: the listener's accept queue is full; the SYN is dropped and
	// a dial times out.
	QueueFull
	// CheckQueue: a candidate listener's queue may be full; refresh the
	// queues of the namespace and ask again with fresh set.
	CheckQueue
)

var verdictNames = [...]string{"unverified", "undecided", "reachable", "refused", "queue-full", "check-queue"}

// String names the verdict for logs and metric labels.
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "invalid"
}
