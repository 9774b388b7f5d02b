package common

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// TestCreateOrPatchWritesOnlyChanges: a mutate that changes nothing (an empty map where there
// was none included) sends no request; a change is one merge patch that keeps the rest.
func TestCreateOrPatchWritesOnlyChanges(t *testing.T) {
	stored := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa",
		Annotations: map[string]string{"keep": "me"}}}
	cases := []struct {
		name    string
		objects []client.Object
		mutate  func(*corev1.ServiceAccount)
		want    controllerutil.OperationResult
		writes  int
		labels  map[string]string
	}{
		{"missing: created", nil, func(sa *corev1.ServiceAccount) { sa.Labels = map[string]string{"a": "1"} },
			controllerutil.OperationResultCreated, 1, map[string]string{"a": "1"}},
		{"unchanged: no request", []client.Object{stored.DeepCopy()}, func(*corev1.ServiceAccount) {},
			controllerutil.OperationResultNone, 0, nil},
		{"an empty map for none: no request", []client.Object{stored.DeepCopy()}, func(sa *corev1.ServiceAccount) { sa.Labels = map[string]string{} },
			controllerutil.OperationResultNone, 0, nil},
		{"changed: patched", []client.Object{stored.DeepCopy()}, func(sa *corev1.ServiceAccount) { sa.Labels = map[string]string{"a": "2"} },
			controllerutil.OperationResultUpdated, 1, map[string]string{"a": "2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			writes := 0
			c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(tc.objects...).WithInterceptorFuncs(countingWrites(&writes)).Build()
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa"}}
			res, err := CreateOrPatch(context.Background(), c, sa, func() error { tc.mutate(sa); return nil })
			require.NoError(t, err)
			assert.Equal(t, tc.want, res)
			assert.Equal(t, tc.writes, writes, "requests that write")
			got := &corev1.ServiceAccount{}
			require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(sa), got))
			assert.Equal(t, tc.labels, got.Labels)
			if tc.objects != nil {
				assert.Equal(t, map[string]string{"keep": "me"}, got.Annotations, "the rest is kept")
			}
		})
	}
}

func TestCreateOrPatchRefusesARename(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa"}}
	_, err := CreateOrPatch(context.Background(), c, sa, func() error { sa.Name = "other"; return nil })
	assert.Error(t, err)
}

// A writer that records its writes leaves an object alone while the cache does not show its
// last write of it: a create the cache does not show yet is not sent again, and a patch is not
// computed from a copy older than the last one. Once the cache shows the write, or the object
// was deleted on purpose (Forget), it writes again.
func TestCreateOrPatchRecordedWaitsForTheCacheToShowItsLastWrite(t *testing.T) {
	ctx := context.Background()
	server := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	writes := 0
	// The cache: the server's objects, or the copy held in stale while it is set (nil: none).
	var stale client.Object
	staleSet := false
	funcs := countingWrites(&writes)
	funcs.Get = func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if !staleSet {
			return c.Get(ctx, key, obj, opts...)
		}
		if stale == nil {
			return apierrors.NewNotFound(corev1.Resource("serviceaccounts"), key.Name)
		}
		stale.(*corev1.ServiceAccount).DeepCopyInto(obj.(*corev1.ServiceAccount))
		return nil
	}
	cache := interceptor.NewClient(server, funcs)
	w := NewOwnWrites(OwnWriteTTL)
	label := "1"
	apply := func() (controllerutil.OperationResult, bool) {
		t.Helper()
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa"}}
		res, behind, err := CreateOrPatchRecorded(ctx, cache, w, sa, func() error { sa.Labels = map[string]string{"a": label}; return nil })
		require.NoError(t, err)
		return res, behind
	}
	key := client.ObjectKey{Namespace: "ns", Name: "sa"}

	res, behind := apply()
	require.Equal(t, controllerutil.OperationResultCreated, res)
	require.False(t, behind)
	staleSet = true // the cache has not seen the create
	res, behind = apply()
	assert.Equal(t, controllerutil.OperationResultNone, res)
	assert.True(t, behind)
	assert.Equal(t, 1, writes, "no second create")

	// The cache shows the create; the label changes, then changes back while the cache still
	// shows the first version.
	staleSet = false
	first := &corev1.ServiceAccount{}
	require.NoError(t, server.Get(ctx, key, first))
	label = "2"
	res, behind = apply()
	require.Equal(t, controllerutil.OperationResultUpdated, res)
	require.False(t, behind)
	label = "1"
	stale, staleSet = first, true
	_, behind = apply()
	assert.True(t, behind, "a patch from a copy older than the last write would leave the label out")
	assert.Equal(t, 2, writes)
	stale, staleSet = nil, false
	res, _ = apply()
	require.Equal(t, controllerutil.OperationResultUpdated, res)
	got := &corev1.ServiceAccount{}
	require.NoError(t, server.Get(ctx, key, got))
	assert.Equal(t, "1", got.Labels["a"])

	// Deleted on purpose and forgotten: made again at once although the cache never showed
	// the last write.
	require.NoError(t, server.Delete(ctx, got))
	w.Wrote(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa", ResourceVersion: "999999"}})
	w.Forget(key)
	res, behind = apply()
	assert.Equal(t, controllerutil.OperationResultCreated, res)
	assert.False(t, behind)
}

// countingWrites passes creates and patches through, counting them in writes.
func countingWrites(writes *int) interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			*writes++
			return c.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			*writes++
			return c.Patch(ctx, obj, p, opts...)
		},
	}
}
