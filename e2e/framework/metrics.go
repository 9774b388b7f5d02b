package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"

	"k8s.io/component-base/metrics/testutil"
)

// SchedulerMetric reads one sample of grove-scheduler's /metrics: the value of the series of
// that name carrying every one of labels (0 when there is none, as for a gauge never set).
// The e2e scheduler serves /metrics on loopback without authentication for this.
func (e *Env) SchedulerMetric(ctx context.Context, name string, labels map[string]string) (float64, error) {
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback, self-signed
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", e.schedulerSecurePort), nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return metricValue(resp.Body, name, labels)
}

// metricValue finds a sample in the Prometheus text format (parsed by component-base's
// metrics testutil, the parser Kubernetes' own metric tests use).
func metricValue(r io.Reader, name string, labels map[string]string) (float64, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return 0, err
	}
	metrics := testutil.NewMetrics()
	if err := testutil.ParseMetrics(string(data), &metrics); err != nil {
		return 0, err
	}
	for _, s := range metrics[name] {
		if hasLabels(s.Metric, labels) {
			return float64(s.Value), nil
		}
	}
	return 0, nil
}

func hasLabels(m testutil.Metric, want map[string]string) bool {
	for k, v := range want {
		if string(m[testutil.LabelName(k)]) != v {
			return false
		}
	}
	return true
}
