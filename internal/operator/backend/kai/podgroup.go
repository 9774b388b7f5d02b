package kai

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend/internal/thirdparty"
	"github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// SyncPodGang creates or updates the PodGang's KAI PodGroup.
func (b *Backend) SyncPodGang(ctx context.Context, pg *schedv1alpha1.PodGang) error {
	if b.nestedSubGroups && pg.Annotations[AnnotationReplicaPodGroup] == "true" {
		return b.syncReplicaPodGroup(ctx, pg)
	}
	queue := queueOfPodGang(pg, b.cfg.DefaultQueue)
	if queue == "" {
		return fmt.Errorf("PodGang %s/%s has no %s label and the kai-scheduler profile has no defaultQueue", pg.Namespace, pg.Name, LabelQueue)
	}
	var topology string
	if usesTopology(pg) {
		var err error
		if topology, err = b.topologyName(ctx, pg); err != nil {
			return err
		}
	}
	desired, err := desiredPodGroup(pg, queue, topology, b.nestedSubGroups)
	if err == nil && b.disableStaleEviction {
		desired.Object["spec"].(map[string]any)["stalenessGracePeriod"] = neverStale
	}
	if err != nil {
		return err
	}
	if err := thirdparty.ApplyControlled(ctx, b.client, desired, pg.UID); err != nil {
		return fmt.Errorf("applying KAI PodGroup %s/%s: %w", pg.Namespace, pg.Name, err)
	}
	return nil
}

// queueOfPodGang: the operator labels each PodGang with its queue; a PodGang written by
// upstream Grove may carry it as an annotation instead.
func queueOfPodGang(pg *schedv1alpha1.PodGang, defaultQueue string) string {
	if q := pg.Labels[LabelQueue]; q != "" {
		return q
	}
	if q := pg.Annotations[LabelQueue]; q != "" {
		return q
	}
	return defaultQueue
}

// topologyName is the KAI Topology of the PodGang's ClusterTopology: the one referenced for
// kai-scheduler in its schedulerReferences, else the one Grove manages under its name.
func (b *Backend) topologyName(ctx context.Context, pg *schedv1alpha1.PodGang) (string, error) {
	ctName := pg.Annotations[common.AnnotationTopologyName]
	if ctName == "" {
		return "", fmt.Errorf("PodGang %s/%s has topology constraints but no %s annotation naming their ClusterTopology",
			pg.Namespace, pg.Name, common.AnnotationTopologyName)
	}
	ct := &corev1alpha1.ClusterTopology{}
	if err := b.reader.Get(ctx, client.ObjectKey{Name: ctName}, ct); err != nil {
		return "", fmt.Errorf("reading ClusterTopology %s of PodGang %s/%s: %w", ctName, pg.Namespace, pg.Name, err)
	}
	return TopologyNameFor(ct), nil
}

// TopologyNameFor is the KAI Topology that stands for a ClusterTopology.
func TopologyNameFor(ct *corev1alpha1.ClusterTopology) string {
	for _, r := range ct.Spec.SchedulerReferences {
		if r.SchedulerName == string(configv1alpha1.SchedulerNameKAI) {
			return r.Reference
		}
	}
	return ct.Name
}

func usesTopology(pg *schedv1alpha1.PodGang) bool {
	if hasLevel(pg.Spec.TopologyConstraint) {
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

// desiredPodGroup is the KAI PodGroup of a PodGang with the fields Grove sets; topology is the
// KAI Topology its constraints refer to; nested tells that the PodGroup API has minSubGroup.
func desiredPodGroup(pg *schedv1alpha1.PodGang, queue, topology string, nested bool) (*unstructured.Unstructured, error) {
	names := subGroupNames{}
	subGroups, _, total, err := gangSubGroups(pg, topology, "", nested, names)
	if err != nil {
		return nil, err
	}
	spec := map[string]any{"queue": queue, "subGroups": subGroups}
	setMinMember(spec, total, false)
	if pg.Spec.PriorityClassName != "" {
		spec["priorityClassName"] = pg.Spec.PriorityClassName
	}
	if tc := topologyConstraint(pg.Spec.TopologyConstraint, topology); tc != nil {
		spec["topologyConstraint"] = tc
	}
	return podGroupObject(pg, pg.Name, spec), nil
}

// podGroupObject is the KAI PodGroup called name, controlled by owner, whose labels and
// annotations are owner's (the PodCliqueSet's own, mirrored: KAI reads e.g.
// kai.scheduler/node-pool from its PodGroup) plus Grove's.
func podGroupObject(owner *schedv1alpha1.PodGang, name string, spec map[string]any) *unstructured.Unstructured {
	u := thirdparty.New(PodGroupGVK, client.ObjectKey{Namespace: owner.Namespace, Name: name})
	labels := maps.Clone(owner.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, thirdparty.ManagedLabels(map[string]string{common.LabelPodGang: common.ShortenLabelValue(name)}))
	u.SetLabels(labels)
	if len(owner.Annotations) > 0 {
		u.SetAnnotations(maps.Clone(owner.Annotations))
	}
	u.SetOwnerReferences(append(u.GetOwnerReferences(), thirdparty.ControllerReference(owner, schedv1alpha1.SchemeGroupVersion.WithKind("PodGang"))))
	u.Object["spec"] = spec
	return u
}

// subGroupNames are the subGroup names taken in one KAI PodGroup (KAI needs them unique).
type subGroupNames map[string]bool

func (n subGroupNames) take(pg *schedv1alpha1.PodGang, what, name string) error {
	if n[name] {
		return fmt.Errorf("PodGang %s/%s: %s %q has the name of another KAI subGroup", pg.Namespace, pg.Name, what, name)
	}
	n[name] = true
	return nil
}

// gangSubGroups lists the subGroups of one PodGang: one per topologyConstraintGroupConfig (the
// parents) and then one leaf per PodGroup, nested under the config that names it. Subgroups at
// the gang's top level get parent (none when ""). It also returns how many subGroups sit at
// the gang's top level and the gang's minMember, the sum of the PodGroups' minReplicas.
//
// nested (the PodGroup API has minSubGroup): a parent requires all its children through
// minSubGroup, because KAI refuses minMember on a subGroup with children; every leaf states its
// minMember, 0 included. Without minSubGroup a parent holds the sum of its children's
// minMember, and a leaf of 0 leaves minMember unset (that schema's minimum is 1).
func gangSubGroups(pg *schedv1alpha1.PodGang, topology, parent string, nested bool, names subGroupNames) ([]any, int, int64, error) {
	minReplicas := map[string]int32{}
	for _, g := range pg.Spec.PodGroups {
		if _, dup := minReplicas[g.Name]; dup {
			return nil, 0, 0, fmt.Errorf("PodGang %s/%s lists PodGroup %q twice", pg.Namespace, pg.Name, g.Name)
		}
		minReplicas[g.Name] = g.MinReplicas
	}
	for _, g := range pg.Spec.PodGroups {
		if err := names.take(pg, "PodGroup", SubGroupName(g.Name)); err != nil {
			return nil, 0, 0, err
		}
	}
	parentOf := map[string]string{}
	var out []any
	top := 0
	for _, c := range pg.Spec.TopologyConstraintGroupConfigs {
		if err := names.take(pg, "topology group config", c.Name); err != nil {
			return nil, 0, 0, err
		}
		var sum int64
		for _, m := range c.PodGroupNames {
			n, ok := minReplicas[m]
			if !ok {
				return nil, 0, 0, fmt.Errorf("PodGang %s/%s: topology group config %q names unknown PodGroup %q", pg.Namespace, pg.Name, c.Name, m)
			}
			if p, taken := parentOf[m]; taken {
				return nil, 0, 0, fmt.Errorf("PodGang %s/%s: PodGroup %q is in topology group configs %q and %q; KAI nests a subGroup under one parent",
					pg.Namespace, pg.Name, m, p, c.Name)
			}
			parentOf[m] = c.Name
			sum += int64(n)
		}
		sg := map[string]any{"name": c.Name}
		switch {
		case nested && len(c.PodGroupNames) > 0:
			sg["minSubGroup"] = int64(len(c.PodGroupNames))
		case !nested:
			setMinMember(sg, sum, false)
		}
		if parent != "" {
			sg["parent"] = parent
		}
		if tc := topologyConstraint(c.TopologyConstraint, topology); tc != nil {
			sg["topologyConstraint"] = tc
		}
		out = append(out, sg)
		top++
	}
	var total int64
	for _, g := range pg.Spec.PodGroups {
		sg := map[string]any{"name": SubGroupName(g.Name)}
		setMinMember(sg, int64(g.MinReplicas), nested)
		if p, ok := parentOf[g.Name]; ok {
			sg["parent"] = p
		} else {
			if parent != "" {
				sg["parent"] = parent
			}
			top++
		}
		if tc := topologyConstraint(g.TopologyConstraint, topology); tc != nil {
			sg["topologyConstraint"] = tc
		}
		out = append(out, sg)
		total += int64(g.MinReplicas)
	}
	return out, top, total, nil
}

// setMinMember sets minMember; 0 only when zero is true: KAI's schema before minSubGroup does
// not accept 0 (KAI reads an unset minMember as 0), and KAI's admission since then requires
// minMember on every leaf subGroup.
func setMinMember(m map[string]any, n int64, zero bool) {
	if n > 0 || zero {
		m["minMember"] = n
	}
}

// topologyConstraint is a KAI topologyConstraint: the levels are node label keys of topology.
func topologyConstraint(tc *schedv1alpha1.TopologyConstraint, topology string) map[string]any {
	if !hasLevel(tc) {
		return nil
	}
	m := map[string]any{"topology": topology}
	if k := tc.Required(); k != "" {
		m["requiredTopologyLevel"] = k
	}
	if k := tc.Preferred(); k != "" {
		m["preferredTopologyLevel"] = k
	}
	return m
}
