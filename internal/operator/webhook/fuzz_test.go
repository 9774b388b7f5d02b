package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/webhook"
	"github.com/ai-dynamo/grove/internal/testenv/webhooktest"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// topologies is a client.Reader that knows one ClusterTopology, "gpu".
type topologies struct{ client.Reader }

// List finds nothing (no PodCliques whose names could collide).
func (topologies) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

func (topologies) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	ct, ok := obj.(*corev1alpha1.ClusterTopology)
	if !ok || key.Name != "gpu" {
		return apierrors.NewNotFound(corev1alpha1.Resource("clustertopologies"), key.Name)
	}
	*ct = corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: corev1alpha1.ClusterTopologySpec{
		Levels: []corev1alpha1.TopologyLevel{{Domain: "zone", Key: "z"}, {Domain: "block", Key: "b"}, {Domain: "rack", Key: "r"}, {Domain: "host", Key: "h"}},
	}}
	return nil
}

func fuzzSeeds() []*corev1alpha1.PodCliqueSet {
	valid := newPCS("ns", "inference")

	topo := newPCS("ns", "topo")
	topo.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "gpu", Pack: &corev1alpha1.TopologyPackConstraint{Required: "block", Preferred: "zone"}}
	topo.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{PackDomain: "rack"}
	topo.Spec.Template.Cliques[1].TopologyConstraint = &corev1alpha1.TopologyConstraint{PackDomain: "zone", TopologyName: "other"}

	cycle := newPCS("ns", "cycle")
	cycle.Spec.Template.StartupType = ptr.To(corev1alpha1.CliqueStartupTypeExplicit)
	cycle.Spec.Template.Cliques[0].Spec.StartsAfter = []string{"decode", "", "router"}
	cycle.Spec.Template.Cliques[2].Spec.StartsAfter = []string{"router", "prefill", "nope"}
	cycle.Spec.Template.Cliques[1].Spec.StartsAfter = []string{"decode"}

	sharing := newPCS("ns", "sharing")
	sharing.Spec.Template.ResourceSharing = []corev1alpha1.PCSResourceSharingSpec{{
		ResourceSharingSpec: corev1alpha1.ResourceSharingSpec{Name: "gpus", Scope: "AllReplicas"},
		Filter:              &corev1alpha1.PCSResourceSharingFilter{ChildCliqueNames: []string{"router", "x"}},
	}}
	sharing.Spec.Template.PodCliqueScalingGroupConfigs[0].ResourceSharing = []corev1alpha1.PCSGResourceSharingSpec{{
		ResourceSharingSpec: corev1alpha1.ResourceSharingSpec{Name: "gpus", Namespace: "n", Scope: "Sometimes"},
		Filter:              &corev1alpha1.PCSGResourceSharingFilter{},
	}}

	broken := newPCS("", "")
	broken.Spec.Replicas = -3
	broken.Spec.Template.Cliques = append(broken.Spec.Template.Cliques, nil)
	broken.Spec.Template.Cliques[0].Spec.ScaleConfig = &corev1alpha1.AutoScalingConfig{MaxReplicas: -1}
	broken.Spec.Template.PodCliqueScalingGroupConfigs = append(broken.Spec.Template.PodCliqueScalingGroupConfigs,
		corev1alpha1.PodCliqueScalingGroupConfig{Name: "workers", CliqueNames: []string{"decode", "decode"}, Replicas: ptr.To[int32](0), MinAvailable: ptr.To[int32](-1)})

	return []*corev1alpha1.PodCliqueSet{valid, topo, cycle, sharing, broken, {}}
}

// FuzzValidatePodCliqueSet feeds arbitrary PodCliqueSets (as JSON, new and old) through the
// defaulting and validating webhooks. It must never panic; defaulting must be idempotent; and
// every rejection must be a 422 whose causes all name a field. The seeds run with go test.
func FuzzValidatePodCliqueSet(f *testing.F) {
	seeds := fuzzSeeds()
	for i, s := range seeds {
		newJSON, err := json.Marshal(s)
		require.NoError(f, err)
		oldJSON, err := json.Marshal(seeds[(i+1)%len(seeds)])
		require.NoError(f, err)
		f.Add(newJSON, newJSON)
		f.Add(newJSON, oldJSON)
	}
	f.Add([]byte(`{"spec":{"template":{"cliques":[null,{}],"podCliqueScalingGroups":[{"cliqueNames":[""]}]}}}`), []byte(`{}`))

	registry, err := webhooktest.Registry(context.Background(), nil)
	require.NoError(f, err)
	validators := []*webhook.PodCliqueSetValidator{
		{Reader: topologies{}, Backends: registry, TopologyAwareScheduling: true},
		{Reader: topologies{}, Backends: registry, TopologyAwareScheduling: false},
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, newJSON, oldJSON []byte) {
		pcs := &corev1alpha1.PodCliqueSet{}
		if json.Unmarshal(newJSON, pcs) != nil {
			return
		}
		require.NoError(t, webhook.PodCliqueSetDefaulter{}.Default(ctx, pcs))
		again := pcs.DeepCopy()
		require.NoError(t, webhook.PodCliqueSetDefaulter{}.Default(ctx, again))
		require.Equal(t, pcs, again, "defaulting is idempotent")

		old := &corev1alpha1.PodCliqueSet{}
		hasOld := json.Unmarshal(oldJSON, old) == nil
		if hasOld {
			require.NoError(t, webhook.PodCliqueSetDefaulter{}.Default(ctx, old))
		}
		for _, v := range validators {
			_, err := v.ValidateCreate(ctx, pcs.DeepCopy())
			requireFieldPathedRejection(t, err)
			if hasOld {
				_, err = v.ValidateUpdate(ctx, old.DeepCopy(), pcs.DeepCopy())
				requireFieldPathedRejection(t, err)
			}
		}
	})
}

func requireFieldPathedRejection(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	require.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
	var status apierrors.APIStatus
	require.True(t, errors.As(err, &status))
	details := status.Status().Details
	require.NotNil(t, details)
	require.NotEmpty(t, details.Causes)
	for _, c := range details.Causes {
		require.True(t, strings.HasPrefix(c.Field, "spec.") || strings.HasPrefix(c.Field, "metadata."),
			"cause without a field path: %+v", c)
	}
}
