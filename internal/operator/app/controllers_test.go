package app

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
)

// Each controller writes through a rate limiter of its own: one controller that used up its
// budget does not hold up another's writes (before, all shared the manager's client).
func TestControllerClientsHaveTheirOwnRateLimiter(t *testing.T) {
	c := cluster.Shared
	ns := c.TestNamespace(t)
	scheme, err := Scheme()
	require.NoError(t, err)
	// The mapper discovers without throttling; only the controllers' clients are limited.
	hc, err := rest.HTTPClientFor(c.Config)
	require.NoError(t, err)
	mapper, err := apiutil.NewDynamicRESTMapper(c.Config, hc)
	require.NoError(t, err)
	cfg := rest.CopyConfig(c.Config)
	// One request at once, the next in ~17 minutes: a second request of the same client
	// cannot start within its context's deadline, and the limiter says so at once.
	cfg.QPS, cfg.Burst = 0.001, 1
	opts := client.Options{Scheme: scheme, Mapper: mapper}
	pcs, err := controllerClient(cfg, opts, "podcliqueset")
	require.NoError(t, err)
	pclq, err := controllerClient(cfg, opts, "podclique")
	require.NoError(t, err)

	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	require.NoError(t, pcs.Create(ctx, cm("first")))
	require.ErrorContains(t, pcs.Create(ctx, cm("second")), "rate", "the podcliqueset client has used its burst")
	require.NoError(t, pclq.Create(ctx, cm("other-controller")), "the podclique client has a budget of its own")
}
