package volcano

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend/internal/thirdparty"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// SyncPodGang creates or updates the PodGang's Volcano PodGroup.
func (b *Backend) SyncPodGang(ctx context.Context, pg *schedv1alpha1.PodGang) error {
	var keys []string
	if needsLevels(pg) {
		var err error
		if keys, err = b.topologyKeys(ctx, pg); err != nil {
			return err
		}
	}
	desired, err := desiredPodGroup(pg, queueOfPodGang(pg.Annotations, pg.Labels, b.cfg.DefaultQueue), &b.cfg, keys)
	if err != nil {
		return err
	}
	if err := thirdparty.ApplyControlled(ctx, b.client, desired, pg.UID); err != nil {
		return fmt.Errorf("applying Volcano PodGroup %s/%s: %w", pg.Namespace, pg.Name, err)
	}
	return nil
}

// topologyKeys are the node label keys of the PodGang's ClusterTopology, broadest first.
func (b *Backend) topologyKeys(ctx context.Context, pg *schedv1alpha1.PodGang) ([]string, error) {
	name := pg.Annotations[common.AnnotationTopologyName]
	if name == "" {
		return nil, fmt.Errorf("PodGang %s/%s has topology constraints but no %s annotation naming their ClusterTopology",
			pg.Namespace, pg.Name, common.AnnotationTopologyName)
	}
	ct := &corev1alpha1.ClusterTopology{}
	if err := b.reader.Get(ctx, client.ObjectKey{Name: name}, ct); err != nil {
		return nil, fmt.Errorf("reading ClusterTopology %s of PodGang %s/%s: %w", name, pg.Namespace, pg.Name, err)
	}
	return ct.Spec.Keys(), nil
}

// needsLevels: whether translating the PodGang's constraints compares levels (a part of the
// gang constrained, or a preferred domain next to another required one).
func needsLevels(pg *schedv1alpha1.PodGang) bool {
	if tc := pg.Spec.TopologyConstraint; tc.Required() != "" && tc.Preferred() != "" && tc.Required() != tc.Preferred() {
		return true
	}
	for _, g := range pg.Spec.PodGroups {
		if hasLevel(g.TopologyConstraint) {
			return true
		}
	}
	for _, c := range pg.Spec.TopologyConstraintGroupConfigs {
		if hasLevel(c.TopologyConstraint) {
			return true
		}
	}
	return false
}

func hasLevel(tc *schedv1alpha1.TopologyConstraint) bool {
	return tc.Required() != "" || tc.Preferred() != ""
}

// desiredPodGroup is the Volcano PodGroup of a PodGang with the fields Grove sets; keys are the
// levels of its ClusterTopology (needed only when parts of the gang are constrained).
func desiredPodGroup(pg *schedv1alpha1.PodGang, queue string, cfg *Config, keys []string) (*unstructured.Unstructured, error) {
	minTaskMember := map[string]any{}
	var total int64
	for _, g := range pg.Spec.PodGroups {
		if _, dup := minTaskMember[g.Name]; dup {
			return nil, fmt.Errorf("PodGang %s/%s lists PodGroup %q twice", pg.Namespace, pg.Name, g.Name)
		}
		minTaskMember[g.Name] = int64(g.MinReplicas)
		total += int64(g.MinReplicas)
	}
	spec := map[string]any{"queue": queue, "minMember": total, "minTaskMember": minTaskMember}
	if pg.Spec.PriorityClassName != "" {
		spec["priorityClassName"] = pg.Spec.PriorityClassName
	}
	nt, err := networkTopology(pg, cfg, keys)
	if err != nil {
		return nil, err
	}
	if nt != nil {
		spec["networkTopology"] = nt
	}
	u := thirdparty.New(PodGroupGVK, client.ObjectKey{Namespace: pg.Namespace, Name: pg.Name})
	// The PodGang's labels and annotations (the PodCliqueSet's own, mirrored) reach Volcano,
	// which reads e.g. volcano.sh/preemptable and sla-waiting-time from its PodGroup.
	labels := maps.Clone(pg.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, thirdparty.ManagedLabels(map[string]string{common.LabelPodGang: common.ShortenLabelValue(pg.Name)}))
	u.SetLabels(labels)
	if len(pg.Annotations) > 0 {
		u.SetAnnotations(maps.Clone(pg.Annotations))
	}
	u.SetOwnerReferences(append(u.GetOwnerReferences(), thirdparty.ControllerReference(pg, schedv1alpha1.SchemeGroupVersion.WithKind("PodGang"))))
	u.Object["spec"] = spec
	return u, nil
}

// networkTopology is the PodGroup's spec.networkTopology (nil: none). Constraints that Volcano
// cannot express are errors here; admission rejects the PodCliqueSets that would have them.
func networkTopology(pg *schedv1alpha1.PodGang, cfg *Config, keys []string) (map[string]any, error) {
	gang := pg.Spec.TopologyConstraint
	gr, gp := gang.Required(), gang.Preferred()
	if shared := pg.Spec.SharedTopologyConstraint; shared.Required() != "" && shared.Group != pg.Name {
		return nil, fmt.Errorf("PodGang %s/%s: volcano cannot keep it in the %q domain its base PodGang %s took: each PodGang is a Volcano PodGroup of its own",
			pg.Namespace, pg.Name, shared.Required(), shared.Group)
	}
	index := keyIndex(keys)
	check := func(what string, tc *schedv1alpha1.TopologyConstraint) error {
		if r := tc.Required(); r != "" && !covered(r, true, gr, gp, index) {
			return fmt.Errorf("PodGang %s/%s: %s requires %q, which volcano cannot express inside the PodGroup's networkTopology", pg.Namespace, pg.Name, what, r)
		}
		if p := tc.Preferred(); p != "" && !covered(p, false, gr, gp, index) {
			return fmt.Errorf("PodGang %s/%s: %s prefers %q, which volcano cannot express inside the PodGroup's networkTopology", pg.Namespace, pg.Name, what, p)
		}
		return nil
	}
	for _, g := range pg.Spec.PodGroups {
		if err := check("PodGroup "+g.Name, g.TopologyConstraint); err != nil {
			return nil, err
		}
	}
	for _, c := range pg.Spec.TopologyConstraintGroupConfigs {
		if err := check("topology group "+c.Name, c.TopologyConstraint); err != nil {
			return nil, err
		}
	}
	switch {
	case gr != "":
		if gp != "" && !covered(gp, false, gr, "", index) {
			return nil, fmt.Errorf("PodGang %s/%s: volcano cannot express preferred %q next to the broader required %q", pg.Namespace, pg.Name, gp, gr)
		}
		t, ok := cfg.tierFor(gr)
		if !ok {
			return nil, fmt.Errorf("PodGang %s/%s requires %q, which has no HyperNode tier in the volcano profile's topologyTiers", pg.Namespace, pg.Name, gr)
		}
		nt := map[string]any{"mode": "hard"}
		if t.Tier != nil {
			nt["highestTierAllowed"] = int64(*t.Tier)
		} else {
			nt["highestTierName"] = t.TierName
		}
		return nt, nil
	case gp != "":
		return map[string]any{"mode": "soft"}, nil
	}
	return nil, nil
}
