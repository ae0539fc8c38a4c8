package zones

import (
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// markingBurst is the node lifecycle controller's evictionLimiterBurst.
const markingBurst = 1

// Limiters paces the markings of each zone, one token bucket per zone as
// the node lifecycle controller's RateLimitedTimedQueue has; SetRate swaps
// a zone's bucket only when its rate changes, so a zone keeps its pace
// across monitor passes. Not safe for concurrent use.
type Limiters struct {
	clock clock.PassiveClock
	zones map[string]*zoneLimiter
}

type zoneLimiter struct {
	rate float32
	rl   flowcontrol.PassiveRateLimiter // nil at rate 0
}

// NewLimiters returns Limiters on c.
func NewLimiters(c clock.PassiveClock) *Limiters {
	return &Limiters{clock: c, zones: map[string]*zoneLimiter{}}
}

// SetRate sets a zone's rate, pods per second; 0 marks nothing.
func (l *Limiters) SetRate(zone string, rate float32) {
	z := l.zones[zone]
	if z != nil && z.rate == rate {
		return
	}
	next := &zoneLimiter{rate: rate}
	if rate > 0 {
		next.rl = flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(rate, markingBurst, l.clock)
		// As RateLimitedTimedQueue.SwapLimiter: a zone that was waiting
		// for a token waits on the new bucket too, so a swap does not
		// hand out a free marking.
		if z != nil && (z.rl == nil || !z.rl.TryAccept()) {
			next.rl.TryAccept()
		}
	}
	l.zones[zone] = next
}

// Rate is a zone's rate; a zone never set marks nothing.
func (l *Limiters) Rate(zone string) float32 {
	if z := l.zones[zone]; z != nil {
		return z.rate
	}
	return 0
}

// TryAccept takes a token of the zone for one marking, if one is there now.
func (l *Limiters) TryAccept(zone string) bool {
	z := l.zones[zone]
	return z != nil && z.rl != nil && z.rl.TryAccept()
}

// Apply sets every zone's rate from a Verdict and drops zones it does not
// name.
func (l *Limiters) Apply(v Verdict) {
	for zone, r := range v.Rates {
		l.SetRate(zone, r)
	}
	for zone := range l.zones {
		if _, ok := v.Rates[zone]; !ok {
			delete(l.zones, zone)
		}
	}
}
