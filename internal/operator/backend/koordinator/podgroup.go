package koordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend/internal/thirdparty"
	"github.com/ai-dynamo/grove/pkg/api/common"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// SyncPodGang creates or updates one Koordinator PodGroup per PodGroup of the PodGang and
// deletes the ones of PodGroups the PodGang no longer has (removed PodGangs take theirs along
// through the owner reference).
func (b *Backend) SyncPodGang(ctx context.Context, pg *schedv1alpha1.PodGang) error {
	desired, err := desiredPodGroups(pg, b.cfg)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, u := range desired {
		if err := thirdparty.ApplyControlled(ctx, b.client, u, pg.UID); err != nil {
			return fmt.Errorf("applying Koordinator PodGroup %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		keep[u.GetName()] = true
	}
	return b.deleteStalePodGroups(ctx, pg, keep)
}

func (b *Backend) deleteStalePodGroups(ctx context.Context, pg *schedv1alpha1.PodGang, keep map[string]bool) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(PodGroupGVK.GroupVersion().WithKind(PodGroupGVK.Kind + "List"))
	if err := b.client.List(ctx, list, client.InNamespace(pg.Namespace),
		client.MatchingLabels{common.LabelPodGang: common.ShortenLabelValue(pg.Name)}); err != nil {
		return fmt.Errorf("listing Koordinator PodGroups of PodGang %s/%s: %w", pg.Namespace, pg.Name, err)
	}
	for i := range list.Items {
		u := &list.Items[i]
		if keep[u.GetName()] || !thirdparty.IsControlledBy(u, pg.UID) {
			continue
		}
		if err := b.client.Delete(ctx, u, client.Preconditions{UID: ptr.To(u.GetUID())}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting stale Koordinator PodGroup %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		b.log.V(1).Info("deleted the Koordinator PodGroup of a removed PodGroup", "podGroup", client.ObjectKeyFromObject(u))
	}
	return nil
}

// desiredPodGroups are the Koordinator PodGroups of a PodGang, with the fields Grove sets.
func desiredPodGroups(pg *schedv1alpha1.PodGang, cfg Config) ([]*unstructured.Unstructured, error) {
	if len(pg.Spec.TopologyConstraintGroupConfigs) > 0 {
		// Admission rejects the scaling-group constraints these come from; fail closed rather
		// than schedule the gang without them.
		return nil, fmt.Errorf("PodGang %s/%s packs subsets of its PodGroups (topologyConstraintGroupConfigs), which koord-scheduler cannot express",
			pg.Namespace, pg.Name)
	}
	members := make([]string, 0, len(pg.Spec.PodGroups))
	seen := map[string]bool{}
	for _, g := range pg.Spec.PodGroups {
		name := PodGroupName(pg.Name, g.Name)
		if seen[name] {
			return nil, fmt.Errorf("PodGang %s/%s: two PodGroups map to Koordinator PodGroup %q", pg.Namespace, pg.Name, name)
		}
		seen[name] = true
		members = append(members, pg.Namespace+"/"+name)
	}
	groups, err := json.Marshal(members)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, g := range pg.Spec.PodGroups {
		annotations := map[string]string{
			AnnotationGangGroups:      string(groups),
			AnnotationGangMode:        cfg.GangMode,
			AnnotationGangMatchPolicy: cfg.MatchPolicy,
		}
		// Koordinator's total-number is the gang's pod count; it is known once the PodGang
		// lists the pods.
		if n := len(g.PodReferences); n > 0 && int32(n) >= g.MinReplicas {
			annotations[AnnotationGangTotalNumber] = strconv.Itoa(n)
		}
		topologySpec, err := networkTopologySpec(cfg.TopologyLayers, pg.Spec.TopologyConstraint, g.TopologyConstraint)
		if err != nil {
			return nil, fmt.Errorf("PodGang %s/%s, PodGroup %s: %w", pg.Namespace, pg.Name, g.Name, err)
		}
		if topologySpec != "" {
			annotations[AnnotationNetworkTopologySpec] = topologySpec
		}
		u := thirdparty.New(PodGroupGVK, client.ObjectKey{Namespace: pg.Namespace, Name: PodGroupName(pg.Name, g.Name)})
		u.SetLabels(thirdparty.ManagedLabels(map[string]string{common.LabelPodGang: common.ShortenLabelValue(pg.Name)}))
		u.SetAnnotations(annotations)
		u.SetOwnerReferences(append(u.GetOwnerReferences(), thirdparty.ControllerReference(pg, schedv1alpha1.SchemeGroupVersion.WithKind("PodGang"))))
		podGroupSpec := map[string]any{"minMember": int64(g.MinReplicas)}
		if cfg.ScheduleTimeoutSeconds != nil {
			podGroupSpec["scheduleTimeoutSeconds"] = int64(*cfg.ScheduleTimeoutSeconds)
		}
		u.Object["spec"] = podGroupSpec
		out = append(out, u)
	}
	return out, nil
}

// Gather strategies of a network-topology-spec rule.
const (
	mustGather   = "MustGather"
	preferGather = "PreferGather"
)

type gatherRule struct {
	Layer    string `json:"layer"`
	Strategy string `json:"strategy"`
}

// networkTopologySpec is the network-topology-spec annotation of a PodGroup: the gang's
// constraint and the PodGroup's own, required keys as MustGather and preferred ones as
// PreferGather rules on their layers (MustGather wins when both name one layer). It is ""
// without constraints. A key without a configured layer is an error.
func networkTopologySpec(layers TopologyLayers, constraints ...*schedv1alpha1.TopologyConstraint) (string, error) {
	var rules []gatherRule
	add := func(key, strategy string) error {
		if key == "" {
			return nil
		}
		layer, ok := layers.layerFor(key)
		if !ok {
			return fmt.Errorf("topology key %q has no Koordinator layer in the koord-scheduler profile (configured: %s)", key, layers.describe())
		}
		for i := range rules {
			if rules[i].Layer == layer {
				if strategy == mustGather {
					rules[i].Strategy = mustGather
				}
				return nil
			}
		}
		rules = append(rules, gatherRule{Layer: layer, Strategy: strategy})
		return nil
	}
	for _, tc := range constraints {
		if err := add(tc.Required(), mustGather); err != nil {
			return "", err
		}
		if err := add(tc.Preferred(), preferGather); err != nil {
			return "", err
		}
	}
	if len(rules) == 0 {
		return "", nil
	}
	b, err := json.Marshal(struct {
		GatherStrategy []gatherRule `json:"gatherStrategy"`
	}{rules})
	return string(b), err
}
