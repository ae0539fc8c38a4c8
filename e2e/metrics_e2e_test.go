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
	c := http.Client{Timeout: 5 * time.Second}
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
	mf, ok := mfs[name]
	if !ok || len(mf.GetMetric()) != 1 || mf.GetMetric()[0].GetGauge() == nil {
		return 0, fmt.Errorf("metric %s: not one gauge in /metrics", name)
	}
	return mf.GetMetric()[0].GetGauge().GetValue(), nil
}
