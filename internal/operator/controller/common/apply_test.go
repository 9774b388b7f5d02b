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

// testOwner stands in for a PodCliqueSet (any object with a UID can own).
var testOwner = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "owner-uid"}}

func testChild() Child {
	return Child{Owner: testOwner, PodCliqueSet: "p", Component: "c", Field: "metadata.name"}
}

// asCreated is sa as the operator made it for testChild, with extra labels.
func asCreated(sa *corev1.ServiceAccount, extra map[string]string) *corev1.ServiceAccount {
	sa = sa.DeepCopy()
	sa.Labels = WithLabels(WithLabels(sa.Labels, ComponentLabels("p", "c")), extra)
	if err := controllerutil.SetControllerReference(testOwner, sa, scheme.Scheme); err != nil {
		panic(err)
	}
	return sa
}

// TestCreateOrPatchWritesOnlyChanges: a mutate that changes nothing (an empty map where there
// was none included) sends no request; a change is one merge patch that keeps the rest.
func TestCreateOrPatchWritesOnlyChanges(t *testing.T) {
	stored := asCreated(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa",
		Annotations: map[string]string{"keep": "me"}}}, nil)
	grove := ComponentLabels("p", "c")
	cases := []struct {
		name    string
		objects []client.Object
		mutate  func(*corev1.ServiceAccount)
		want    controllerutil.OperationResult
		writes  int
		labels  map[string]string
	}{
		{"missing: created", nil, func(sa *corev1.ServiceAccount) { sa.Labels = map[string]string{"a": "1"} },
			controllerutil.OperationResultCreated, 1, WithLabels(grove, map[string]string{"a": "1"})},
		{"unchanged: no request", []client.Object{stored.DeepCopy()}, func(*corev1.ServiceAccount) {},
			controllerutil.OperationResultNone, 0, grove},
		{"an empty annotation map for none: no request", []client.Object{stored.DeepCopy()}, func(sa *corev1.ServiceAccount) { sa.Annotations = map[string]string{"keep": "me"} },
			controllerutil.OperationResultNone, 0, grove},
		{"changed: patched", []client.Object{stored.DeepCopy()}, func(sa *corev1.ServiceAccount) { sa.Labels = map[string]string{"a": "2"} },
			controllerutil.OperationResultUpdated, 1, WithLabels(grove, map[string]string{"a": "2"})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			writes := 0
			c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(tc.objects...).WithInterceptorFuncs(countingWrites(&writes)).Build()
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa"}}
			res, err := CreateOrPatch(context.Background(), c, testChild(), sa, func() error { tc.mutate(sa); return nil })
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
	_, err := CreateOrPatch(context.Background(), c, testChild(), sa, func() error { sa.Name = "other"; return nil })
	assert.Error(t, err)
}

// TestCreateOrPatchLeavesForeignObjectsAlone: an object of the child's name that Grove did not
// create for this owner (no labels, or labels without the controller reference, or another
// controller) is neither patched nor adopted; the write reports a NameConflict naming it and the
// field its name comes from.
func TestCreateOrPatchLeavesForeignObjectsAlone(t *testing.T) {
	plain := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa"}}
	labelledOnly := plain.DeepCopy()
	labelledOnly.Labels = ComponentLabels("p", "c")
	otherOwner := asCreated(plain, nil)
	otherOwner.OwnerReferences[0].UID = "another-uid"
	otherComponent := asCreated(plain, map[string]string{"app.kubernetes.io/component": "other"})
	for name, foreign := range map[string]*corev1.ServiceAccount{
		"no labels": plain, "labels only": labelledOnly, "another owner": otherOwner, "another component": otherComponent,
	} {
		t.Run(name, func(t *testing.T) {
			writes := 0
			c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(foreign.DeepCopy()).WithInterceptorFuncs(countingWrites(&writes)).Build()
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa"}}
			_, err := CreateOrPatch(context.Background(), c, testChild(), sa, func() error { sa.Labels = map[string]string{"a": "1"}; return nil })
			nc, ok := AsNameConflict(err)
			require.True(t, ok, "a NameConflict, got %v", err)
			assert.Equal(t, NameConflict{Kind: "ServiceAccount", Namespace: "ns", Name: "sa", Field: "metadata.name"}, *nc)
			assert.Zero(t, writes)
		})
	}
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
