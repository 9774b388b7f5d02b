package podcliqueset

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// The fast path creates a PodGang once every pod of it exists, reading only its replica's
// objects; a gang still missing pods, one that exists, and pods the clique does not control are
// left to the gang writer.
func TestGangCreatorCreatesACompleteGangOfItsReplica(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, corev1alpha1.AddToScheme(scheme))
	require.NoError(t, schedv1alpha1.AddToScheme(scheme))

	pcs := &corev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pcs-uid", Generation: 1},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 3, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{{Name: "w", Spec: corev1alpha1.PodCliqueSpec{Replicas: 2}}},
		}},
	}
	controller := func(kind, name, uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: corev1alpha1.SchemeGroupVersion.String(), Kind: kind, Name: name,
			UID: types.UID(uid), Controller: ptr.To(true)}}
	}
	objs := []client.Object{pcs}
	pod := func(replica int, name string, controlled bool) *corev1.Pod {
		pclq := apicommon.StandalonePodCliqueName("p", replica, "w")
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: common.WithLabels(common.ReplicaLabels("p", apicommon.ComponentPCSPodClique, replica), map[string]string{
				apicommon.LabelPodClique: pclq, apicommon.LabelPodGang: apicommon.BasePodGangName("p", replica)})}}
		if controlled {
			p.OwnerReferences = controller("PodClique", pclq, pclq)
		}
		return p
	}
	for i := range 3 {
		name := apicommon.StandalonePodCliqueName("p", i, "w")
		objs = append(objs, &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: common.ReplicaLabels("p", apicommon.ComponentPCSPodClique, i), OwnerReferences: controller("PodCliqueSet", "p", "pcs-uid")},
			Spec: corev1alpha1.PodCliqueSpec{Replicas: 2}})
	}
	objs = append(objs,
		pod(0, "p-0-w-a", true),                          // replica 0: one pod of two
		pod(1, "p-1-w-a", true), pod(1, "p-1-w-b", true), // replica 1: complete
		pod(2, "p-2-w-a", true), pod(2, "p-2-w-b", false)) // replica 2: the second pod is a stray

	var created []string
	byGang := common.LabelIndex(apicommon.LabelPodGang)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&schedv1alpha1.PodGang{}).
		WithIndex(&corev1.Pod{}, byGang, common.IndexManagedLabel(apicommon.LabelPodGang)).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				created = append(created, obj.GetName())
				return c.Create(ctx, obj, opts...)
			},
			// The Initialized condition is applied server-side, which the fake client does not do.
			SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
				return nil
			},
		}).Build()
	gc := &gangCreator{r: &Reconciler{Client: c, Registry: &backend.Registry{}}}
	ctx := context.Background()

	for i := range 3 {
		_, err := gc.Reconcile(ctx, gangRequest("p-"+strconv.Itoa(i)))
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"p-1"}, created, "only the gang whose pods all exist")

	pg := &schedv1alpha1.PodGang{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "p-1"}, pg))
	require.Len(t, pg.Spec.PodGroups, 1)
	assert.Equal(t, "p-1-w", pg.Spec.PodGroups[0].Name)
	assert.Equal(t, []schedv1alpha1.NamespacedName{{Namespace: "ns", Name: "p-1-w-a"}, {Namespace: "ns", Name: "p-1-w-b"}}, pg.Spec.PodGroups[0].PodReferences)
	assert.Equal(t, "1", pg.Labels[apicommon.LabelPodCliqueSetReplicaIndex])
	assert.True(t, metav1.IsControlledBy(pg, pcs), "owned by its PodCliqueSet, as the gang writer's gangs are")

	res, err := gc.Reconcile(ctx, gangRequest("p-1"))
	require.NoError(t, err)
	assert.Equal(t, []string{"p-1"}, created, "an existing gang is the gang writer's")
	assert.Zero(t, res.RequeueAfter)

	// The old gang of a replica made again is still going away: no pod event will come back,
	// so the request does.
	old := &schedv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-9", Finalizers: []string{"test/hold"}}}
	require.NoError(t, c.Create(ctx, old))
	require.NoError(t, c.Delete(ctx, old))
	res, err = gc.Reconcile(ctx, gangRequest("p-9"))
	require.NoError(t, err)
	assert.Positive(t, res.RequeueAfter)
}

func gangRequest(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
}
