package webhook_test

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"

	"github.com/ai-dynamo/grove/internal/operator/webhook"
	"github.com/ai-dynamo/grove/internal/testenv/webhooktest"
	"github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
)

type declared struct {
	config, webhook, path, resource string
	mutating                        bool
}

// TestManifestsDeclareTheServedWebhooks keeps config/webhook/manifests.yaml, the names the
// certificate provisioner injects into and the paths the handlers are served on in step.
func TestManifestsDeclareTheServedWebhooks(t *testing.T) {
	mutating, validating, err := webhooktest.Manifests()
	require.NoError(t, err)
	var got []declared
	check := func(cc admissionregistrationv1.WebhookClientConfig, fp *admissionregistrationv1.FailurePolicyType, se *admissionregistrationv1.SideEffectClass, name string) {
		require.NotNil(t, cc.Service, name)
		assert.Equal(t, configv1alpha1.DefaultWebhookService, cc.Service.Name, name)
		assert.Equal(t, configv1alpha1.DefaultNamespace, cc.Service.Namespace, name)
		// Only the deletion warning may be skipped when the operator is down: it refuses nothing.
		wantPolicy := admissionregistrationv1.Fail
		if name == common.WebhookNameClusterTopologyDeletion {
			wantPolicy = admissionregistrationv1.Ignore
		}
		assert.Equal(t, wantPolicy, *fp, name)
		assert.Equal(t, admissionregistrationv1.SideEffectClassNone, *se, name)
	}
	for _, m := range mutating {
		for _, w := range m.Webhooks {
			check(w.ClientConfig, w.FailurePolicy, w.SideEffects, w.Name)
			got = append(got, declared{m.Name, w.Name, *w.ClientConfig.Service.Path, strings.Join(w.Rules[0].Resources, ","), true})
		}
	}
	for _, v := range validating {
		for _, w := range v.Webhooks {
			check(w.ClientConfig, w.FailurePolicy, w.SideEffects, w.Name)
			got = append(got, declared{v.Name, w.Name, *w.ClientConfig.Service.Path, strings.Join(w.Rules[0].Resources, ","), false})
		}
	}
	assert.ElementsMatch(t, []declared{
		{common.MutatingWebhookConfigurationName, common.WebhookNamePodCliqueSetDefaulting, webhook.PathDefaultPodCliqueSet, "podcliquesets", true},
		{common.ValidatingWebhookConfigurationName, common.WebhookNamePodCliqueSetValidating, webhook.PathValidatePodCliqueSet, "podcliquesets", false},
		{common.ValidatingWebhookConfigurationName, common.WebhookNameClusterTopologyValidating, webhook.PathValidateClusterTopology, "clustertopologies", false},
		{common.ValidatingWebhookConfigurationName, common.WebhookNameClusterTopologyDeletion, webhook.PathValidateClusterTopology, "clustertopologies", false},
		{common.ValidatingWebhookConfigurationName, common.WebhookNameClusterTopologyBindingValidating, webhook.PathValidateClusterTopologyBinding, "clustertopologybindings", false},
	}, got)

	// Every declared path has a handler (an empty body is a bad request, not a 404).
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme: newScheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	registry, err := webhooktest.Registry(context.Background(), nil)
	require.NoError(t, err)
	require.NoError(t, webhook.Register(mgr, webhook.Options{Backends: registry, Reader: mgr.GetAPIReader()}))
	for _, d := range got {
		rec := httptest.NewRecorder()
		mgr.GetWebhookServer().WebhookMux().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, d.path, strings.NewReader("")))
		assert.NotEqual(t, http.StatusNotFound, rec.Code, d.path)
	}
	rec := httptest.NewRecorder()
	mgr.GetWebhookServer().WebhookMux().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/not-a-webhook", strings.NewReader("")))
	assert.Equal(t, http.StatusNotFound, rec.Code, "the mux answers unknown paths with 404")
}

// TestOperatorMayInjectIntoItsWebhookConfigurations keeps the ClusterRole's resourceNames in
// step with the configurations the certificate provisioner updates.
func TestOperatorMayInjectIntoItsWebhookConfigurations(t *testing.T) {
	root, err := cluster.ModuleRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "operator.yaml"))
	require.NoError(t, err)
	var names []string
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if err != nil {
			break
		}
		role := &rbacv1.ClusterRole{}
		require.NoError(t, sigsyaml.Unmarshal(doc, role))
		if role.Kind != "ClusterRole" {
			continue
		}
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, admissionregistrationv1.GroupName) && slices.Contains(r.Verbs, "update") {
				assert.ElementsMatch(t, []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"}, r.Resources)
				names = append(names, r.ResourceNames...)
			}
		}
	}
	assert.ElementsMatch(t, []string{common.MutatingWebhookConfigurationName, common.ValidatingWebhookConfigurationName}, names)
}
