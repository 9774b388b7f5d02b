package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// The replica gauges count what the PodCliqueSets' status says; only updates under way count
// towards the rolling-update gauge.
func TestStateCollectorCountsReplicasAndUpdatesUnderWay(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, corev1alpha1.AddToScheme(scheme))
	require.NoError(t, schedv1alpha1.AddToScheme(scheme))
	ended := metav1.Now()
	pcs := func(name string, replicas, available, updated int32, progress *corev1alpha1.PodCliqueSetUpdateProgress) *corev1alpha1.PodCliqueSet {
		return &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec:   corev1alpha1.PodCliqueSetSpec{Replicas: replicas},
			Status: corev1alpha1.PodCliqueSetStatus{AvailableReplicas: available, UpdatedReplicas: updated, UpdateProgress: progress}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		pcs("steady", 2, 2, 2, nil),
		pcs("rolling", 4, 3, 1, &corev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: ended}),
		pcs("rolled", 3, 1, 3, &corev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: ended, UpdateEndedAt: &ended}),
	).Build()
	want := `
# HELP grove_podcliqueset_replicas PodCliqueSet replicas by state: available, unavailable (wanted but not available).
# TYPE grove_podcliqueset_replicas gauge
grove_podcliqueset_replicas{state="available"} 6
grove_podcliqueset_replicas{state="unavailable"} 3
# HELP grove_podcliqueset_rolling_update_replicas Replicas of PodCliqueSets under a rolling update, by state: updated, pending (not yet on the new template).
# TYPE grove_podcliqueset_rolling_update_replicas gauge
grove_podcliqueset_rolling_update_replicas{state="pending"} 3
grove_podcliqueset_rolling_update_replicas{state="updated"} 1
`
	require.NoError(t, testutil.CollectAndCompare(stateCollector{c}, strings.NewReader(want),
		"grove_podcliqueset_replicas", "grove_podcliqueset_rolling_update_replicas"))
}
