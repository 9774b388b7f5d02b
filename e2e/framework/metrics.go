package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"k8s.io/component-base/metrics/testutil"
)

// SchedulerMetric reads one sample of grove-scheduler's /metrics: the value of the series of
// that name carrying every one of labels (0 when there is none, as for a gauge never set).
// The e2e scheduler serves /metrics as shipped, to authorised callers only: the request
// carries a token of a ServiceAccount bound to grove-metrics-reader.
func (e *Env) SchedulerMetric(ctx context.Context, name string, labels map[string]string) (float64, error) {
	token, err := e.MetricsReaderToken(ctx)
	if err != nil {
		return 0, err
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback, self-signed
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", e.schedulerSecurePort), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
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

// metricsReader is the ServiceAccount (in Namespace) whose token scrapes /metrics in tests.
const metricsReader = "grove-e2e-metrics-reader"

// MetricsReaderToken is a token of a ServiceAccount bound to the shipped grove-metrics-reader
// ClusterRole, as a Prometheus would hold (made on first use).
func (e *Env) MetricsReaderToken(ctx context.Context) (string, error) {
	e.metricsMu.Lock()
	defer e.metricsMu.Unlock()
	if e.metricsToken != "" {
		return e.metricsToken, nil
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: metricsReader}}
	if err := e.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: metricsReader},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "grove-metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: Namespace, Name: metricsReader}}}
	if err := e.Client.Create(ctx, crb); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	tr, err := e.Clientset.CoreV1().ServiceAccounts(Namespace).CreateToken(ctx, metricsReader,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	e.metricsToken = tr.Status.Token
	return e.metricsToken, nil
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
