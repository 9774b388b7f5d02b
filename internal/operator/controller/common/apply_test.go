package common

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
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
			count := interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					writes++
					return c.Create(ctx, obj, opts...)
				},
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
					writes++
					return c.Patch(ctx, obj, p, opts...)
				},
			}
			c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(tc.objects...).WithInterceptorFuncs(count).Build()
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
