package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// handoffMetric is probelet's histogram of NRI event → probe engine.
const handoffMetric = "probelet_lifecycle_event_to_worker_seconds"

// histogram is what a Prometheus histogram tells about its quantiles: the
// bucket upper bound each falls under.
type histogram struct {
	count      uint64
	p50, p99   time.Duration // bucket upper bounds; +Inf as 0
	meanMicros float64
}

// handoff reads the in-process part of probelet's latency from /metrics.
func (d *daemon) handoff(ctx context.Context) (histogram, error) {
	text, err := d.metricsText(ctx)
	if err != nil {
		return histogram{}, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return histogram{}, err
	}
	mf, ok := mfs[handoffMetric]
	if !ok || len(mf.GetMetric()) != 1 {
		return histogram{}, fmt.Errorf("%s not in probelet's /metrics", handoffMetric)
	}
	h := mf.GetMetric()[0].GetHistogram()
	out := histogram{count: h.GetSampleCount()}
	if out.count > 0 {
		out.meanMicros = h.GetSampleSum() / float64(out.count) * 1e6
	}
	for _, q := range []struct {
		q   float64
		dst *time.Duration
	}{{0.50, &out.p50}, {0.99, &out.p99}} {
		want := uint64(math.Ceil(q.q * float64(out.count)))
		for _, b := range h.GetBucket() {
			if b.GetCumulativeCount() >= want {
				*q.dst = time.Duration(b.GetUpperBound() * float64(time.Second))
				break
			}
		}
	}
	return out, nil
}
