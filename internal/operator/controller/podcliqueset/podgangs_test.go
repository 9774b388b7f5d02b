package podcliqueset

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// Whether a gang that is still missing pods is due is judged at the instant the plan read the
// cache, not when its turn comes in the pass. Here the pass's first create takes 1.5 s; the
// second gang, one of its two pods a second old when the plan was made (creation times have
// whole seconds), must not be created incomplete (it was, when the grace was checked against
// the clock at its turn), and the pass asks to come back soon, its grace having run out.
func TestIncompleteGangIsJudgedAtThePlanInstant(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, corev1alpha1.AddToScheme(scheme))
	require.NoError(t, schedv1alpha1.AddToScheme(scheme))

	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	pcs := &corev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pcs-uid", Generation: 1},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 2, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{{Name: "w", Spec: corev1alpha1.PodCliqueSpec{Replicas: 2}}},
		}},
	}
	owner := func(kind, name string, uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: corev1alpha1.SchemeGroupVersion.String(), Kind: kind, Name: name,
			UID: types.UID(uid), Controller: ptr.To(true)}}
	}
	objs := []client.Object{pcs}
	pod := func(replica int, name string, age time.Duration) *corev1.Pod {
		pclq := apicommon.StandalonePodCliqueName("p", replica, "w")
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			CreationTimestamp: metav1.NewTime(clk.Now().Add(-age)),
			Labels: common.WithLabels(apicommon.DefaultLabels("p"), map[string]string{
				apicommon.LabelPodClique: pclq, apicommon.LabelPodGang: apicommon.BasePodGangName("p", replica)}),
			OwnerReferences: owner("PodClique", pclq, pclq)}}
	}
	for i := range 2 {
		name := apicommon.StandalonePodCliqueName("p", i, "w")
		objs = append(objs, &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			CreationTimestamp: metav1.NewTime(clk.Now().Add(-3 * time.Second)),
			Labels:            common.ReplicaLabels("p", apicommon.ComponentPCSPodClique, i), OwnerReferences: owner("PodCliqueSet", "p", "pcs-uid")},
			Spec: corev1alpha1.PodCliqueSpec{Replicas: 2}})
	}
	objs = append(objs, pod(0, "p-0-w-a", 2*time.Second), pod(0, "p-0-w-b", 2*time.Second), pod(1, "p-1-w-a", time.Second))

	byPCS := common.LabelIndex(apicommon.LabelPartOfKey)
	var created []string
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&schedv1alpha1.PodGang{}).
		WithIndex(&corev1alpha1.PodClique{}, byPCS, common.IndexManagedLabel(apicommon.LabelPartOfKey)).
		WithIndex(&corev1alpha1.PodCliqueScalingGroup{}, byPCS, common.IndexManagedLabel(apicommon.LabelPartOfKey)).
		WithIndex(&schedv1alpha1.PodGang{}, byPCS, common.IndexManagedLabel(apicommon.LabelPartOfKey)).
		WithIndex(&corev1.Pod{}, byPCS, common.IndexManagedLabel(apicommon.LabelPartOfKey)).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				created = append(created, obj.GetName())
				clk.Step(1500 * time.Millisecond) // a create on a busy apiserver
				return c.Create(ctx, obj, opts...)
			},
			// The Initialized condition is applied server-side, which the fake client does not do.
			SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
				return nil
			},
		}).Build()

	r := &Reconciler{Client: c, Registry: &backend.Registry{}, clock: clk}
	st := r.newState(pcs)
	require.NoError(t, (&podGangs{r}).Sync(context.Background(), st))

	assert.Equal(t, []string{"p-0"}, created, "only the complete gang is created")
	assert.Equal(t, minGangRequeue, st.requeue, "its grace ran out during the pass: the next pass plans it afresh")
}
