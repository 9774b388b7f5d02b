package framework

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
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

// metricValue finds a sample in the Prometheus text format: `name{k="v",...} value`.
func metricValue(r io.Reader, name string, labels map[string]string) (float64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || strings.HasPrefix(line, "#") {
			continue
		}
		rest := line[len(name):]
		var set string
		if strings.HasPrefix(rest, "{") {
			end := strings.LastIndex(rest, "}")
			if end < 0 {
				continue
			}
			set, rest = rest[1:end], rest[end+1:]
		}
		if !strings.HasPrefix(rest, " ") || !hasLabels(set, labels) {
			continue // another metric sharing the prefix, or another series
		}
		fields := strings.Fields(rest)
		return strconv.ParseFloat(fields[0], 64)
	}
	return 0, sc.Err()
}

func hasLabels(set string, want map[string]string) bool {
	for k, v := range want {
		if !strings.Contains(","+set+",", ","+k+"="+strconv.Quote(v)+",") {
			return false
		}
	}
	return true
}
