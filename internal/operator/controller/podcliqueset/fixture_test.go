package podcliqueset

import (
	"context"
	"testing"
	"time"

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

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// gangFixture is a PodCliqueSet "p" in namespace "ns" whose replicas are one clique "w" of 2
// pods, with its PodCliques; pods are added by the test.
type gangFixture struct {
	pcs  *corev1alpha1.PodCliqueSet
	objs []client.Object
}

func newGangFixture(replicas int, cliquesCreated time.Time) *gangFixture {
	f := &gangFixture{pcs: &corev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pcs-uid", Generation: 1},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: int32(replicas), Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{{Name: "w", Spec: corev1alpha1.PodCliqueSpec{Replicas: 2}}},
		}},
	}}
	f.objs = append(f.objs, f.pcs)
	for i := range replicas {
		f.objs = append(f.objs, &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: "ns",
			Name: apicommon.StandalonePodCliqueName("p", i, "w"), CreationTimestamp: metav1.NewTime(cliquesCreated),
			Labels:          common.ReplicaLabels("p", apicommon.ComponentPCSPodClique, i),
			OwnerReferences: controlledBy("PodCliqueSet", "p", "pcs-uid")},
			Spec: corev1alpha1.PodCliqueSpec{Replicas: 2}})
	}
	return f
}

// addPod adds a pod of the replica's clique, controlled by the clique unless stray.
func (f *gangFixture) addPod(replica int, name string, created time.Time, stray bool) {
	pclq := apicommon.StandalonePodCliqueName("p", replica, "w")
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(created),
		Labels: common.WithLabels(common.ReplicaLabels("p", apicommon.ComponentPCSPodClique, replica), map[string]string{
			apicommon.LabelPodClique: pclq, apicommon.LabelPodGang: apicommon.BasePodGangName("p", replica)})}}
	if !stray {
		p.OwnerReferences = controlledBy("PodClique", pclq, pclq)
	}
	f.objs = append(f.objs, p)
}

// client is a fake client holding the objects, with the operator's label indexes. The
// Initialized condition is applied server-side, which the fake client does not do: status
// patches are dropped.
func (f *gangFixture) client(t *testing.T, funcs interceptor.Funcs) client.WithWatch {
	t.Helper()
	funcs.SubResourcePatch = func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
		return nil
	}
	return f.builder(t).WithStatusSubresource(&schedv1alpha1.PodGang{}).WithInterceptorFuncs(funcs).Build()
}

// builder is a fake client builder holding the objects, with the operator's label indexes.
func (f *gangFixture) builder(t *testing.T) *fake.ClientBuilder {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, corev1alpha1.AddToScheme(scheme))
	require.NoError(t, schedv1alpha1.AddToScheme(scheme))
	byPCS, byGang := common.LabelIndex(apicommon.LabelPartOfKey), common.LabelIndex(apicommon.LabelPodGang)
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(f.objs...).
		WithIndex(&corev1alpha1.PodClique{}, byPCS, common.IndexManagedLabel(apicommon.LabelPartOfKey)).
		WithIndex(&corev1alpha1.PodCliqueScalingGroup{}, byPCS, common.IndexManagedLabel(apicommon.LabelPartOfKey)).
		WithIndex(&schedv1alpha1.PodGang{}, byPCS, common.IndexManagedLabel(apicommon.LabelPartOfKey)).
		WithIndex(&corev1.Pod{}, byPCS, common.IndexManagedLabel(apicommon.LabelPartOfKey)).
		WithIndex(&corev1.Pod{}, byGang, common.IndexManagedLabel(apicommon.LabelPodGang))
}

func controlledBy(kind, name, uid string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: corev1alpha1.SchemeGroupVersion.String(), Kind: kind, Name: name,
		UID: types.UID(uid), Controller: ptr.To(true)}}
}
