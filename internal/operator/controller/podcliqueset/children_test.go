package podcliqueset

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// The reconcile reads each kind of child once; a write to a kind makes the next reader list it
// again, and only that kind.
func TestChildrenAreListedOncePerKindUntilWritten(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, corev1alpha1.AddToScheme(scheme))
	require.NoError(t, schedv1alpha1.AddToScheme(scheme))
	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "inference", UID: "pcs-uid"}}
	clique := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "inference-0-router", Labels: apicommon.DefaultLabels("inference")}}
	foreign := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other-0-router", Labels: apicommon.DefaultLabels("other")}}
	lists := map[string]int{}
	byPCS := common.LabelIndex(apicommon.LabelPartOfKey)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(clique, foreign).
		WithIndex(&corev1alpha1.PodClique{}, byPCS, common.IndexManagedLabel(apicommon.LabelPartOfKey)).
		WithIndex(&corev1.Pod{}, byPCS, common.IndexManagedLabel(apicommon.LabelPartOfKey)).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			lists[typeName(list)]++
			return c.List(ctx, list, opts...)
		}}).Build()
	ctx := context.Background()
	ch := newChildren(c, pcs)

	for range 3 {
		pclqs, err := ch.podCliques(ctx)
		require.NoError(t, err)
		require.Len(t, pclqs, 1, "only the PodCliqueSet's own labels select")
		_, err = ch.pods(ctx)
		require.NoError(t, err)
	}
	assert.Equal(t, map[string]int{"PodCliqueList": 1, "PodList": 1}, lists)

	ch.wrote(childPodCliques)
	_, err := ch.podCliques(ctx)
	require.NoError(t, err)
	_, err = ch.pods(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"PodCliqueList": 2, "PodList": 1}, lists, "only the written kind is listed again")
}

func typeName(list client.ObjectList) string {
	switch list.(type) {
	case *corev1alpha1.PodCliqueList:
		return "PodCliqueList"
	default:
		return "PodList"
	}
}
