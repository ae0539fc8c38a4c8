package main

import (
	"math"
	"slices"
	"time"
)

// summary is a latency distribution's p50, p99 and extremes.
type summary struct {
	n             int
	min, p50, p99 time.Duration
	max           time.Duration
}

// summarize uses nearest-rank percentiles: with few samples p99 is the
// largest but one or the largest, never an interpolation.
func summarize(ds []time.Duration) summary {
	if len(ds) == 0 {
		return summary{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return summary{n: len(s), min: s[0], p50: rank(s, 0.50), p99: rank(s, 0.99), max: s[len(s)-1]}
}

func rank(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// between collects to − from for every sample.
func between(samples []sample, from, to func(sample) time.Time) []time.Duration {
	out := make([]time.Duration, 0, len(samples))
	for _, s := range samples {
		out = append(out, to(s).Sub(from(s)))
	}
	return out
}
