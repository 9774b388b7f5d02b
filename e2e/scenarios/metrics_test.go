//go:build e2e

package scenarios

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// prometheus runs the real Prometheus (Debian's package, `make prometheus`) scraping both
// programs every second with a token of a ServiceAccount bound to grove-metrics-reader.
type prometheus struct {
	t    *testing.T
	base string
}

func startPrometheus(t *testing.T, env *framework.Env) *prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	require.NoError(t, err, "prometheus is not installed: run make prometheus")
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: framework.Namespace, Name: "prometheus"}}
	require.NoError(t, env.Client.Create(ctx, sa))
	require.NoError(t, env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-grove-metrics-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "grove-metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: framework.Namespace, Name: "prometheus"}}}))
	tr, err := env.Clientset.CoreV1().ServiceAccounts(framework.Namespace).CreateToken(ctx, "prometheus",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(token, []byte(tr.Status.Token), 0o600))
	config := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: grove-operator
    scheme: https
    tls_config: {insecure_skip_verify: true}
    authorization: {credentials_file: %q}
    static_configs: [{targets: [%q]}]
  - job_name: grove-scheduler
    scheme: https
    tls_config: {insecure_skip_verify: true}
    authorization: {credentials_file: %q}
    static_configs: [{targets: [%q]}]
`, token, env.OperatorMetricsAddr(), token, env.SchedulerMetricsAddr())
	cfgPath := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(config), 0o644))
	port, err := cluster.FreePort()
	require.NoError(t, err)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p, err := env.Cluster.StartProcess("prometheus", bin, []string{"--config.file=" + cfgPath,
		"--storage.tsdb.path=" + filepath.Join(dir, "data"), "--web.listen-address=" + addr}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Stop(10 * time.Second) })
	prom := &prometheus{t: t, base: "http://" + addr}
	require.Eventually(t, func() bool {
		up, err := prom.query(`sum(up{job=~"grove-operator|grove-scheduler"})`)
		return err == nil && len(up) == 1 && up[0] == 2
	}, 2*time.Minute, time.Second, "Prometheus never scraped both programs successfully")
	return prom
}

// query runs an instant query and returns the value of every series.
func (p *prometheus) query(q string) ([]float64, error) {
	resp, err := http.Get(p.base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", q, body.Error)
	}
	var out []float64
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// scalar waits until q returns exactly one series satisfying ok and returns its value.
func (p *prometheus) eventually(q string, ok func(float64) bool, msg string) {
	p.t.Helper()
	var last []float64
	var lastErr error
	if !assert.Eventually(p.t, func() bool {
		last, lastErr = p.query(q)
		return lastErr == nil && len(last) == 1 && ok(last[0])
	}, time.Minute, time.Second) {
		p.t.Errorf("%s: %s returned %v (err %v)", msg, q, last, lastErr)
	}
}

// A placed gang, a gang that cannot fit, and a pod the operator replaces: a real Prometheus
// scraping both programs over authenticated HTTPS sees the counts move as the scenario implies,
// and every panel of the shipped Grafana dashboard returns data.
func TestMetricsScrapedByPrometheus(t *testing.T) {
	env, _, ns := nodesEnv(t, framework.Options{}, 4, oneCPUNode)
	ctx := context.Background()
	prom := startPrometheus(t, env)
	// Unauthenticated scrapes of the operator are refused.
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: insecureTLS()}, Timeout: 10 * time.Second}
	resp, err := insecure.Get("https://" + env.OperatorMetricsAddr() + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "grove-operator /metrics without a token")

	require.NoError(t, env.Client.Create(ctx, pcs(ns, "fits", 1, clique("w", 2, "1"))))
	// Ordered startup: the second clique's pod runs the startup waiter (kwok completes it).
	ordered := pcs(ns, "ordered", 1, clique("a", 1, "1"), clique("b", 1, "1"))
	ordered.Spec.Template.StartupType = ptr.To(corev1alpha1.CliqueStartupTypeInOrder)
	require.NoError(t, env.Client.Create(ctx, ordered))
	waitScheduled(t, env, ns, common.BasePodGangName("fits", 0), common.BasePodGangName("ordered", 0))
	require.NoError(t, env.Client.Create(ctx, pcs(ns, "big", 1, clique("w", 10, "1"))))
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "fits")) == 2 }, time.Minute, 250*time.Millisecond)
	// A pod of the placed gang goes away: the operator creates its replacement.
	victim := podsOf(t, env, ns, "fits")[0]
	require.NoError(t, env.Client.Delete(ctx, &victim, client.GracePeriodSeconds(0)))
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "fits")) == 2 }, time.Minute, 250*time.Millisecond)
	// A template change rolls fits' pods; the update's duration is observed when it ends.
	updatePCS(t, env, ns, "fits", func(p *corev1alpha1.PodCliqueSet) {
		p.Spec.Template.Cliques[0].Labels = map[string]string{"version": "v2"}
	})
	require.Eventually(t, func() bool {
		cur := &corev1alpha1.PodCliqueSet{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fits"}, cur))
		up := cur.Status.UpdateProgress
		return cur.Status.UpdatedReplicas == 1 && up != nil && up.UpdateEndedAt != nil
	}, 2*time.Minute, 250*time.Millisecond, "the rolling update of fits never finished")

	atLeast := func(n float64) func(float64) bool { return func(v float64) bool { return v >= n } }
	equals := func(n float64) func(float64) bool { return func(v float64) bool { return v == n } }
	// 2 + 2 + 10 pods, the replacement and the 2 rolled pods.
	prom.eventually(`sum(grove_operator_pods_created_total)`, atLeast(17), "pods created")
	// grove-scheduler's pods are created without the gate (the scheduler holds them until their
	// PodGang lists them): the gate metrics are exported, and stay at zero.
	prom.eventually(`sum(grove_operator_scheduling_gates_lifted_total)`, equals(0), "no gate to lift")
	prom.eventually(`sum(grove_operator_pod_gated_duration_seconds_count)`, equals(0), "no pod gated")
	prom.eventually(`sum(grove_operator_pods_deleted_total{reason="update"})`, equals(2), "both pods of fits rolled")
	prom.eventually(`sum(grove_operator_rolling_update_duration_seconds_count)`, equals(1), "one rolling update finished")
	prom.eventually(`sum(grove_operator_startup_wait_duration_seconds_count)`, equals(1), "ordered's second pod waited for the first clique")
	prom.eventually(`sum(grove_podcliquesets{ready="false"})`, equals(1), "big is not Ready")
	prom.eventually(`sum(grove_podcliquesets{ready="true"})`, equals(2), "fits and ordered are Ready")
	prom.eventually(`sum(grove_podgangs{scheduled="true"})`, equals(2), "two gangs scheduled")
	prom.eventually(`sum(grove_scheduler_gangs_waiting{reason="no_room"})`, equals(1), "big waits for room")
	prom.eventually(`sum(grove_scheduler_gangs_waiting)`, equals(1), "no other gang waits")
	prom.eventually(`sum(grove_scheduler_gangs_placed_total{pack_key="none"})`, atLeast(2), "fits and ordered placed")
	prom.eventually(`sum(grove_scheduler_quorum_bound_duration_seconds_count)`, atLeast(2), "quorum time observed")
	prom.eventually(`sum(grove_scheduler_permit_waits_total)`, atLeast(1), "the first pod of fits waited at Permit")
	prom.eventually(`sum(grove_scheduler_member_plans_total{outcome="handed_out"})`, atLeast(1), "the second pod of fits went to the node its gang's plan named")

	// Every dashboard panel has data, and names only metrics the programs export.
	root, err := cluster.ModuleRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "config", "monitoring", "grafana-dashboard.json"))
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(data, &dash))
	require.NotEmpty(t, dash.Panels)
	names := regexp.MustCompile(`\b(grove_[a-z_]+|up)\b`)
	for _, panel := range dash.Panels {
		require.NotEmpty(t, panel.Targets, panel.Title)
		for _, target := range panel.Targets {
			series, err := prom.query(target.Expr)
			if assert.NoError(t, err, panel.Title) {
				assert.NotEmpty(t, series, "panel %q: %s returns no series", panel.Title, target.Expr)
			}
			for _, name := range names.FindAllString(target.Expr, -1) {
				exists, err := prom.query(`count({__name__="` + name + `"})`)
				if assert.NoError(t, err) {
					assert.NotEmpty(t, exists, "panel %q names %s, which nobody exports", panel.Title, name)
				}
			}
		}
	}
}

// insecureTLS trusts any certificate: the programs' metrics certificates are self-signed.
func insecureTLS() *tls.Config { return &tls.Config{InsecureSkipVerify: true} } //nolint:gosec // test-only, loopback
