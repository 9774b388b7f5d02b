package webhook_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ai-dynamo/grove/internal/operator/webhook"
	"github.com/ai-dynamo/grove/internal/operator/webhook/webhooktest"
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
		assert.Equal(t, admissionregistrationv1.Fail, *fp, name)
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
	}, got)

	// Every declared path has a handler (an empty body is a bad request, not a 404).
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme: newScheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	registry, err := webhooktest.Registry()
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
