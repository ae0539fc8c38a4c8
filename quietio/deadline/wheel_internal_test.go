package deadline

import (
	"context"
	"slices"
	"testing"
	"time"
)

// opsAlarm records how the wheel drives its alarm.
type opsAlarm struct{ ops []string }

func (a *opsAlarm) Set(time.Time) { a.ops = append(a.ops, "set") }
func (a *opsAlarm) Disarm()       { a.ops = append(a.ops, "disarm") }
func (a *opsAlarm) Fire()         { a.ops = append(a.ops, "fire") }
func (a *opsAlarm) Wait()         {}
func (a *opsAlarm) Close()        {}

// TestTheWheelSetsOrDisarmsAfterEveryWakeUp: a timer file alarm that went
// off stays due until it is set or disarmed again, so the wheel must do one
// or the other after every wake-up — also when the earliest deadline it had
// armed is gone and nothing is left (a wheel that skipped it would spin).
func TestTheWheelSetsOrDisarmsAfterEveryWakeUp(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name      string
		deadlines []time.Duration // from now; the past ones are due
		want      string          // the alarm's last op after the wake-up
		left      int
	}{
		{"the last deadline passed", []time.Duration{-time.Second}, "disarm", 0},
		{"one passed, one ahead", []time.Duration{-time.Second, time.Hour}, "set", 1},
		{"a spurious wake-up, nothing due", []time.Duration{time.Hour}, "set", 1},
		{"a wake-up with nothing held", nil, "disarm", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := &opsAlarm{}
			w := &wheel{alarm: a}
			for _, d := range tc.deadlines {
				w.add(newTimed(context.Background(), now.Add(d)))
			}
			a.ops = nil
			for _, tm := range w.due(now) {
				tm.end(context.DeadlineExceeded)
			}
			if len(a.ops) == 0 || a.ops[len(a.ops)-1] != tc.want || slices.Contains(a.ops, "fire") {
				t.Errorf("alarm ops after the wake-up %v, want ending in %s", a.ops, tc.want)
			}
			if len(w.heap) != tc.left {
				t.Errorf("%d deadlines left, want %d", len(w.heap), tc.left)
			}
		})
	}
}
