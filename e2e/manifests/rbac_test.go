package manifests

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/internal/operator/cert"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	_ "github.com/ai-dynamo/grove/pkg/api/pluginargs/scheme" // decodes the scheduler config's plugin args
)

// installRBAC applies the shipped RBAC of both programs for real.
func installRBAC(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the control plane")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, framework.InstallRBAC(ctx, cluster.Shared))
}

// leaderElection is what a program's configuration says about leader election.
type leaderElection struct {
	enabled         bool
	namespace, name string
}

// TestProgramsRunWithLeaderElection: both Deployments run two replicas, so both programs must
// elect a leader - in the configuration file and in the ConfigMap config/default ships - and
// their ServiceAccount must be allowed to hold that lease.
func TestProgramsRunWithLeaderElection(t *testing.T) {
	installRBAC(t)
	root, err := cluster.ModuleRoot()
	require.NoError(t, err)
	configMaps := map[string]map[string]any{}
	for _, o := range build(t, filepath.Join(root, "config", "default")) {
		if o.GetKind() == "ConfigMap" {
			configMaps[o.GetName()] = o.Object["data"].(map[string]any)
		}
	}
	admin, err := kubernetes.NewForConfig(cluster.Shared.Config)
	require.NoError(t, err)

	for _, tc := range []struct {
		program, serviceAccount, shipped, configMap string
		decode                                      func(t *testing.T, data []byte) leaderElection
	}{
		{"grove-scheduler", framework.SchedulerServiceAccount, "config/scheduler/scheduler-config.yaml", "grove-scheduler-config", decodeSchedulerConfig},
		{"grove-operator", framework.OperatorServiceAccount, "config/operator/operator-config.yaml", "grove-operator-config", decodeOperatorConfig},
	} {
		t.Run(tc.program, func(t *testing.T) {
			shipped, err := os.ReadFile(filepath.Join(root, tc.shipped))
			require.NoError(t, err)
			data, ok := configMaps[tc.configMap][filepath.Base(tc.shipped)].(string)
			require.True(t, ok, "config/default has no ConfigMap %s with key %s", tc.configMap, filepath.Base(tc.shipped))
			for source, content := range map[string][]byte{tc.shipped: shipped, "ConfigMap " + tc.configMap: []byte(data)} {
				le := tc.decode(t, content)
				require.True(t, le.enabled, "%s: leader election is off", source)
				assert.Equal(t, framework.Namespace, le.namespace, "%s: the lease is not in the namespace of the program's Role", source)
				for _, attrs := range []authorizationv1.ResourceAttributes{
					{Verb: "create"},
					{Verb: "get", Name: le.name},
					{Verb: "update", Name: le.name},
				} {
					attrs.Namespace, attrs.Group, attrs.Resource = le.namespace, coordinationv1.GroupName, "leases"
					sar, err := admin.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{
						Spec: authorizationv1.SubjectAccessReviewSpec{
							User:               serviceaccount.MakeUsername(framework.Namespace, tc.serviceAccount),
							Groups:             serviceaccount.MakeGroupNames(framework.Namespace),
							ResourceAttributes: &attrs,
						}}, metav1.CreateOptions{})
					require.NoError(t, err)
					assert.True(t, sar.Status.Allowed, "%s: the shipped RBAC does not let %s %s lease %s/%s", source, tc.serviceAccount, attrs.Verb, le.namespace, le.name)
				}
			}
		})
	}
}

// decodeSchedulerConfig decodes as kube-scheduler does for --config, defaults included.
func decodeSchedulerConfig(t *testing.T, data []byte) leaderElection {
	t.Helper()
	obj, _, err := kubeschedulerscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	require.NoError(t, err)
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	require.True(t, ok, "decoded %T", obj)
	return leaderElection{enabled: cfg.LeaderElection.LeaderElect, namespace: cfg.LeaderElection.ResourceNamespace, name: cfg.LeaderElection.ResourceName}
}

// decodeOperatorConfig decodes as grove-operator does for --config, defaults included.
func decodeOperatorConfig(t *testing.T, data []byte) leaderElection {
	t.Helper()
	cfg, err := configv1alpha1.Decode(data)
	require.NoError(t, err)
	le := cfg.LeaderElection
	return leaderElection{enabled: le.Enabled, namespace: le.ResourceNamespace, name: le.ResourceName}
}

// TestOperatorRBACCoversWebhookCertificates runs certProvisionMode auto's certificate
// provisioning as grove-operator's ServiceAccount with the names of the shipped configuration:
// it creates the Secret, injects the CA into both webhook configurations, and rewrites a
// damaged Secret. The e2e scenarios run the operator in manual mode, so only this covers the
// Role's Secret grant and the webhook configuration grant.
func TestOperatorRBACCoversWebhookCertificates(t *testing.T) {
	installRBAC(t)
	root, err := cluster.ModuleRoot()
	require.NoError(t, err)
	ctx := t.Context()
	admin, err := client.New(cluster.Shared.Config, client.Options{Scheme: clientgoscheme.Scheme})
	require.NoError(t, err)
	// The configurations point at a Service that does not exist here; nothing in this package
	// creates what they intercept, and they go when the test ends.
	require.NoError(t, cluster.Shared.Apply(ctx, filepath.Join(root, "config", "webhook")))
	t.Cleanup(func() {
		ctx := context.Background()
		assert.NoError(t, client.IgnoreNotFound(admin.Delete(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: common.MutatingWebhookConfigurationName}})))
		assert.NoError(t, client.IgnoreNotFound(admin.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: common.ValidatingWebhookConfigurationName}})))
	})

	data, err := os.ReadFile(filepath.Join(root, "config", "operator", "operator-config.yaml"))
	require.NoError(t, err)
	cfg, err := configv1alpha1.Decode(data)
	require.NoError(t, err)
	wh := cfg.Server.Webhooks
	require.Equal(t, configv1alpha1.CertProvisionModeAuto, wh.CertProvisionMode)
	secretKey := client.ObjectKey{Namespace: wh.Namespace, Name: wh.SecretName}
	t.Cleanup(func() {
		assert.NoError(t, client.IgnoreNotFound(admin.Delete(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: secretKey.Namespace, Name: secretKey.Name}})))
	})

	saCfg, err := cluster.Shared.ServiceAccountConfig(ctx, framework.Namespace, framework.OperatorServiceAccount)
	require.NoError(t, err)
	operator, err := client.New(saCfg, client.Options{Scheme: clientgoscheme.Scheme})
	require.NoError(t, err)
	p, err := cert.NewProvisioner(operator, cert.Options{
		CertDir: t.TempDir(), SecretName: wh.SecretName, Namespace: wh.Namespace, ServiceName: wh.ServiceName,
		MutatingWebhookConfigurations:   []string{common.MutatingWebhookConfigurationName},
		ValidatingWebhookConfigurations: []string{common.ValidatingWebhookConfigurationName},
	}, logr.Discard())
	require.NoError(t, err)

	requireInjected := func() {
		t.Helper()
		secret := &corev1.Secret{}
		require.NoError(t, admin.Get(ctx, secretKey, secret))
		require.NotEmpty(t, secret.Data[common.WebhookSecretKeyCert])
		bundle := secret.Data[common.WebhookSecretKeyCABundle]
		m := &admissionregistrationv1.MutatingWebhookConfiguration{}
		require.NoError(t, admin.Get(ctx, client.ObjectKey{Name: common.MutatingWebhookConfigurationName}, m))
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		require.NoError(t, admin.Get(ctx, client.ObjectKey{Name: common.ValidatingWebhookConfigurationName}, v))
		for _, w := range m.Webhooks {
			assert.Equal(t, bundle, w.ClientConfig.CABundle, w.Name)
		}
		for _, w := range v.Webhooks {
			assert.Equal(t, bundle, w.ClientConfig.CABundle, w.Name)
		}
	}
	require.NoError(t, p.Sync(ctx), "creating the Secret and injecting the CA as the operator")
	requireInjected()

	// A Secret with a damaged serving certificate is rewritten in place (get, update).
	secret := &corev1.Secret{}
	require.NoError(t, admin.Get(ctx, secretKey, secret))
	secret.Data[common.WebhookSecretKeyCert] = []byte("garbage")
	require.NoError(t, admin.Update(ctx, secret))
	require.NoError(t, p.Sync(ctx), "rewriting the damaged Secret as the operator")
	requireInjected()
	require.NoError(t, admin.Get(ctx, secretKey, secret))
	assert.NotEqual(t, "garbage", string(secret.Data[common.WebhookSecretKeyCert]))
}
