package kai

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/backend/internal/thirdparty"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// A PodCliqueSet-level required domain binds every PodGang of a replica to one domain value,
// but KAI packs each PodGroup on its own. Where the KAI PodGroup API has minSubGroup, the
// backend writes one KAI PodGroup per PodCliqueSet replica instead, so KAI places all of the
// replica's gangs under one topology constraint:
//
//	PodGroup <base PodGang>            minSubGroup: all top-level branches, the replica's domain
//	├── <base PodGang>                 minSubGroup: its children (the base gang, required)
//	│   └── topology group configs and PodGroups of the base gang
//	└── <base PodGang>-scaled-podgangs minSubGroup: 0 (each scaled gang is optional)
//	    └── <scaled PodGang>-podgang   minSubGroup: its children (each one a gang of its own)
//	        └── its PodGroups
//
// The PodGroup has the base PodGang's name, which is also the name of the base PodGang's own
// PodGroup without this layout, so the base gang's pods point at it either way. A scaled
// branch is not named like its PodGang: "<group>-<k>" also names group replica k in the base
// gang's topology group configs. Pods name only leaves (their PodGroup), so branch names are
// free; a clash with a PodGroup's name is refused rather than merged.

// AnnotationReplicaPodGroup on a PodGang tells the KAI backend that the PodGang is part of its
// PodCliqueSet replica's KAI PodGroup (value "true"). The backend sets it (PodGangMetadata) on
// the PodGangs of PodCliqueSets whose required domain spans PodGangs.
const AnnotationReplicaPodGroup = "grove.io/kai-replica-podgroup"

// scaledBranchSuffix names the branch that holds a replica's scaled PodGangs, and
// scaledGangSuffix the branch of one of them.
const (
	scaledBranchSuffix = "-scaled-podgangs"
	scaledGangSuffix   = "-podgang"
)

// replicaPodGroup tells whether the pods of a PodCliqueSet join one KAI PodGroup per replica.
func (b *Backend) replicaPodGroup(pcs *corev1alpha1.PodCliqueSet) bool {
	p, _ := backend.ReplicaWideRequired(pcs)
	return p != nil && b.nestedSubGroups
}

// replicaGroupOf is the replica PodGroup's name for a PodGang: its shared group (the base
// PodGang), else the base PodGang it names, else its own.
func replicaGroupOf(pg *schedv1alpha1.PodGang) string {
	if sc := pg.Spec.SharedTopologyConstraint; sc != nil && sc.Group != "" {
		return sc.Group
	}
	if base := pg.Labels[common.LabelBasePodGang]; base != "" {
		return base
	}
	return pg.Name
}

// syncReplicaPodGroup writes the KAI PodGroup of pg's PodCliqueSet replica from the replica's
// live PodGangs (read from the apiserver: the one being synced may be new).
func (b *Backend) syncReplicaPodGroup(ctx context.Context, pg *schedv1alpha1.PodGang) error {
	group := replicaGroupOf(pg)
	base := &schedv1alpha1.PodGang{}
	if err := b.reader.Get(ctx, client.ObjectKey{Namespace: pg.Namespace, Name: group}, base); err != nil {
		return fmt.Errorf("reading base PodGang %s/%s of PodGang %s: %w", pg.Namespace, group, pg.Name, err)
	}
	list := &schedv1alpha1.PodGangList{}
	if err := b.reader.List(ctx, list, client.InNamespace(pg.Namespace), client.MatchingLabels{common.LabelBasePodGang: group}); err != nil {
		return fmt.Errorf("listing the scaled PodGangs of %s/%s: %w", pg.Namespace, group, err)
	}
	var scaled []*schedv1alpha1.PodGang
	for i := range list.Items {
		if g := &list.Items[i]; g.DeletionTimestamp == nil && g.Name != group {
			scaled = append(scaled, g)
		}
	}
	queue := queueOfPodGang(base, b.cfg.DefaultQueue)
	if queue == "" {
		return fmt.Errorf("PodGang %s/%s has no %s label and the kai-scheduler profile has no defaultQueue", base.Namespace, base.Name, LabelQueue)
	}
	var topology string
	if usesTopology(base) || base.Spec.SharedTopologyConstraint.Required() != "" || base.Spec.SharedTopologyConstraint.Preferred() != "" ||
		slices.ContainsFunc(scaled, usesTopology) {
		var err error
		if topology, err = b.topologyName(ctx, base); err != nil {
			return err
		}
	}
	desired, err := desiredReplicaPodGroup(base, scaled, queue, topology)
	if err != nil {
		return err
	}
	if b.disableStaleEviction {
		desired.Object["spec"].(map[string]any)["stalenessGracePeriod"] = neverStale
	}
	if err := thirdparty.ApplyControlled(ctx, b.client, desired, base.UID); err != nil {
		return fmt.Errorf("applying KAI PodGroup %s/%s: %w", base.Namespace, group, err)
	}
	return nil
}

// desiredReplicaPodGroup is the KAI PodGroup of one PodCliqueSet replica (see the layout above),
// owned by its base PodGang.
func desiredReplicaPodGroup(base *schedv1alpha1.PodGang, scaled []*schedv1alpha1.PodGang, queue, topology string) (*unstructured.Unstructured, error) {
	names := subGroupNames{}
	baseBranch := SubGroupName(base.Name)
	if err := names.take(base, "PodGang", baseBranch); err != nil {
		return nil, err
	}
	subGroups := []any{}
	branch := func(pg *schedv1alpha1.PodGang, name, parent string) error {
		children, top, _, err := gangSubGroups(pg, topology, name, true, names)
		if err != nil {
			return err
		}
		if top == 0 {
			return fmt.Errorf("PodGang %s/%s has no PodGroups", pg.Namespace, pg.Name)
		}
		sg := map[string]any{"name": name, "minSubGroup": int64(top)}
		if parent != "" {
			sg["parent"] = parent
		}
		if tc := topologyConstraint(pg.Spec.TopologyConstraint, topology); tc != nil {
			sg["topologyConstraint"] = tc
		}
		subGroups = append(append(subGroups, sg), children...)
		return nil
	}
	if err := branch(base, baseBranch, ""); err != nil {
		return nil, err
	}
	branches := int64(1)
	if len(scaled) > 0 {
		collection := common.ShortenLabelValue(base.Name + scaledBranchSuffix)
		if err := names.take(base, "scaled PodGangs' branch", collection); err != nil {
			return nil, err
		}
		subGroups = append(subGroups, map[string]any{"name": collection, "minSubGroup": int64(0)})
		branches++
		slices.SortFunc(scaled, func(a, b *schedv1alpha1.PodGang) int {
			// Shorter names first keeps replica 9 before replica 10.
			if c := len(a.Name) - len(b.Name); c != 0 {
				return c
			}
			return strings.Compare(a.Name, b.Name)
		})
		for _, g := range scaled {
			name := common.ShortenLabelValue(g.Name + scaledGangSuffix)
			if err := names.take(g, "PodGang", name); err != nil {
				return nil, err
			}
			if err := branch(g, name, collection); err != nil {
				return nil, err
			}
		}
	}
	spec := map[string]any{"queue": queue, "subGroups": subGroups, "minSubGroup": branches}
	if base.Spec.PriorityClassName != "" {
		spec["priorityClassName"] = base.Spec.PriorityClassName
	}
	if tc := sharedTopologyConstraint(base.Spec.SharedTopologyConstraint, topology); tc != nil {
		spec["topologyConstraint"] = tc
	}
	return podGroupObject(base, base.Name, spec), nil
}

// sharedTopologyConstraint is the KAI topologyConstraint of the keys a replica's gangs share.
func sharedTopologyConstraint(sc *schedv1alpha1.SharedTopologyConstraint, topology string) map[string]any {
	if sc == nil {
		return nil
	}
	return topologyConstraint(&schedv1alpha1.TopologyConstraint{PackConstraint: sc.PackConstraint}, topology)
}
