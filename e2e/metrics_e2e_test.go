//go:build e2e

package e2e_test

import (
	"fmt"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads probelet's /metrics.
func (d *daemon) scrape() (map[string]*dto.MetricFamily, error) {
	// No keep-alive: an idle connection would be a goroutine in probelet.
	c := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + d.metrics + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// gauge is the value of an unlabelled gauge, failing the test when absent.
func (d *daemon) gauge(name string) float64 {
	d.t.Helper()
	v, err := d.gaugeValue(name)
	if err != nil {
		d.t.Fatal(err)
	}
	return v
}

func (d *daemon) gaugeValue(name string) (float64, error) {
	mfs, err := d.scrape()
	if err != nil {
		return 0, err
	}
	return gaugeOf(mfs, name)
}

// gaugeOf is the value of the single gauge name in a scrape.
func gaugeOf(mfs map[string]*dto.MetricFamily, name string) (float64, error) {
	mf, ok := mfs[name]
	if !ok || len(mf.GetMetric()) != 1 || mf.GetMetric()[0].GetGauge() == nil {
		return 0, fmt.Errorf("metric %s: not one gauge in /metrics", name)
	}
	return mf.GetMetric()[0].GetGauge().GetValue(), nil
}

// sample is the value of the counter or gauge series of name whose labels
// include labels; ok is false when there is none.
func (d *daemon) sample(name string, labels map[string]string) (v float64, ok bool) {
	d.t.Helper()
	mfs, err := d.scrape()
	if err != nil {
		d.t.Fatal(err)
	}
	for _, m := range mfs[name].GetMetric() {
		if hasLabels(m, labels) {
			return m.GetCounter().GetValue() + m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok && v == lp.GetValue() {
			n++
		}
	}
	return n == len(want)
}

// sum adds up every series of a counter or gauge (0 when there is none).
func (d *daemon) sum(name string) float64 {
	d.t.Helper()
	mfs, err := d.scrape()
	if err != nil {
		d.t.Fatal(err)
	}
	var total float64
	for _, m := range mfs[name].GetMetric() {
		total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return total
}
