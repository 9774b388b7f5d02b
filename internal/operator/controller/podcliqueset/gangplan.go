package podcliqueset

import (
	"sort"
	"time"

	"github.com/ai-dynamo/grove/internal/operator/packing"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// gangPlanInput is what the PodGangs of a PodCliqueSet are computed from. Existing objects
// win over the template: replicas belong to the scale subresources once objects exist.
type gangPlanInput struct {
	// pcs has defaults applied.
	pcs *corev1alpha1.PodCliqueSet
	// pclqs are the existing, non-terminating PodCliques of the PodCliqueSet by name.
	pclqs map[string]*corev1alpha1.PodClique
	// pcsgs are the existing PodCliqueScalingGroups by name.
	pcsgs map[string]*corev1alpha1.PodCliqueScalingGroup
	// pods are the names of live pods by PodGang and PodClique (from the pods' labels).
	pods map[string]map[string][]string
	// firstPod and lastPod are when the oldest and the newest live pod of each PodGang were
	// created.
	firstPod, lastPod map[string]time.Time
	// completeGrace, when set, is how long after its newest pod a complete gang is left to the
	// gang creator (gangcreator.go), which creates it as that pod appears.
	completeGrace time.Duration
	// topology holds the translated constraints (empty without topology-aware scheduling).
	topology packing.Translated
	// onlyReplica, when set, restricts the plan to that PodCliqueSet replica (the other
	// replicas' objects need not be in the input).
	onlyReplica *int
}

// plannedGang is one PodGang the PodCliqueSet should have.
type plannedGang struct {
	name    string
	replica int
	// scalingGroup and base are set for a scaled PodGang.
	scalingGroup string
	base         string
	spec         schedv1alpha1.PodGangSpec
	// complete is true once every pod of every group exists and is referenced.
	complete bool
	// firstPod and lastPod are when its oldest and newest pods were created, firstClique its
	// oldest PodClique (zero when none exists).
	firstPod, lastPod, firstClique time.Time
	// completeGrace: gangPlanInput.completeGrace.
	completeGrace time.Duration
}

// A PodGang is created with its pods, so that it is written once, complete, rather than
// created empty and then patched as each of its pods appears (with an Initialized condition
// written at each step): the create is what the pods' scheduling gates wait for, and at
// hundreds of replicas the extra writes queue on the rate limiter ahead of other gangs'
// creates. A gang whose pods are slow to come is created all the same, listing the pods that
// exist, once its first pod is incompleteGangGrace old — or, when none of its pods could be
// created (a quota, a rejecting webhook), emptyGangGrace after its PodCliques, so that it
// reports Initialized=False (PodsCreationPending) to whoever waits for it.
const (
	incompleteGangGrace = 2 * time.Second
	emptyGangGrace      = 10 * time.Second
	// completeGangGrace is how long the gang writer's passes leave a gang that became complete
	// to the gang creator: both creating it made one create in four fail with AlreadyExists
	// in a 500-replica apply. Pod creation times have whole seconds, hence 2 s for at least 1.
	completeGangGrace = 2 * time.Second
)

// createIn is how long to wait before creating the absent PodGang; 0 means now.
func (g *plannedGang) createIn(now time.Time) time.Duration {
	switch {
	case g.complete && g.completeGrace > 0 && !g.lastPod.IsZero():
		return max(0, g.lastPod.Add(g.completeGrace).Sub(now))
	case g.complete:
		return 0
	case !g.firstPod.IsZero():
		return max(0, g.firstPod.Add(incompleteGangGrace).Sub(now))
	case !g.firstClique.IsZero():
		return max(0, g.firstClique.Add(emptyGangGrace).Sub(now))
	default:
		// Its PodCliques are not in the cache yet: their create events bring the reconcile back.
		return emptyGangGrace
	}
}

// planPodGangs computes, per PodCliqueSet replica, the base PodGang (standalone cliques and
// scaling-group replicas below minAvailable) and one scaled PodGang per scaling-group replica
// at or above minAvailable.
func planPodGangs(in gangPlanInput) []plannedGang {
	t := &in.pcs.Spec.Template
	var gangs []plannedGang
	for i := range int(in.pcs.Spec.Replicas) {
		if in.onlyReplica != nil && *in.onlyReplica != i {
			continue
		}
		base := plannedGang{name: apicommon.BasePodGangName(in.pcs.Name, i), replica: i, complete: true}
		base.spec.TopologyConstraint = in.topology.PodCliqueSet
		// roles: the base gang's PodGroups of each role, for its affinity groups.
		roles := map[string][]string{}
		for _, c := range t.StandaloneCliques() {
			base.addGroup(in, apicommon.StandalonePodCliqueName(in.pcs.Name, i, c.Name), c)
			roles[c.Name] = []string{apicommon.StandalonePodCliqueName(in.pcs.Name, i, c.Name)}
		}
		var scaled []plannedGang
		// sgSpread: the spread entries of each scaled gang, by gang name, set after the
		// PodCliqueSet-level ones; apart: the base gang's anti-affinity groups of spread
		// scaling groups.
		sgSpread := map[string][]schedv1alpha1.ReplicaSpreadConstraint{}
		var apart []schedv1alpha1.RoleAffinityGroup
		for gi := range t.PodCliqueScalingGroupConfigs {
			g := &t.PodCliqueScalingGroupConfigs[gi]
			pcsgName := apicommon.PodCliqueScalingGroupName(in.pcs.Name, i, g.Name)
			replicas, minAvailable := int(corev1alpha1.ScalingGroupReplicas(g)), int(corev1alpha1.ScalingGroupMinAvailable(g))
			if pcsg, ok := in.pcsgs[pcsgName]; ok {
				replicas = int(pcsg.Spec.Replicas)
				if pcsg.Spec.MinAvailable != nil {
					minAvailable = int(*pcsg.Spec.MinAvailable)
				}
			}
			var inBase []string
			inBaseGroups := map[string][]string{}
			for j := range replicas {
				gang := &base
				if j >= minAvailable {
					scaled = append(scaled, plannedGang{
						name: apicommon.ScaledPodGangName(pcsgName, j, minAvailable), replica: i,
						scalingGroup: pcsgName, base: base.name, complete: true,
					})
					gang = &scaled[len(scaled)-1]
					gang.spec.TopologyConstraint = in.topology.ScaledPodGang(g.Name)
				}
				var members []string
				for _, name := range g.CliqueNames {
					if c := t.Clique(name); c != nil {
						member := apicommon.ScalingGroupPodCliqueName(pcsgName, j, name)
						gang.addGroup(in, member, c)
						members = append(members, member)
					}
				}
				// In the base gang each group replica is packed on its own; a scaled gang is one
				// group replica, constrained as a whole.
				if j < minAvailable {
					roles[g.Name] = append(roles[g.Name], members...)
				}
				// Scaling-group replica spread: a replica in the base gang is a member made of
				// its PodGroups, a scaled gang a member of its own.
				sgReplica := apicommon.ScalingGroupReplicaName(pcsgName, j)
				if j < minAvailable {
					base.spec.ReplicaSpreadConstraints = append(base.spec.ReplicaSpreadConstraints,
						in.topology.ScalingGroupReplicaSpread(g.Name, pcsgName, sgReplica, members)...)
					inBase = append(inBase, sgReplica)
					inBaseGroups[sgReplica] = members
				} else if sp := in.topology.ScalingGroupReplicaSpread(g.Name, pcsgName, sgReplica, nil); sp != nil {
					sgSpread[gang.name] = sp
				}
				if gc := in.topology.ScalingGroups[g.Name]; gc != nil && j < minAvailable {
					base.spec.TopologyConstraintGroupConfigs = append(base.spec.TopologyConstraintGroupConfigs,
						schedv1alpha1.TopologyConstraintGroupConfig{
							Name: apicommon.ScalingGroupReplicaName(pcsgName, j), PodGroupNames: members, TopologyConstraint: gc.DeepCopy(),
						})
				}
			}
			apart = append(apart, in.topology.ScalingGroupApart(g.Name, pcsgName, inBase, inBaseGroups)...)
		}
		// The PodCliqueSet-level constraint holds for the whole replica: every PodGang of it
		// carries it as a shared constraint, so that scaled gangs (and gangs recreated later)
		// land in the domain the first placed gang of the replica chose.
		if shared := in.topology.Shared(base.name); shared != nil {
			base.spec.SharedTopologyConstraint = shared
			for k := range scaled {
				scaled[k].spec.SharedTopologyConstraint = shared.DeepCopy()
			}
		}
		if spread := in.topology.ReplicaSpread(in.pcs.Name, base.name); spread != nil {
			base.spec.ReplicaSpreadConstraints = append(spread, base.spec.ReplicaSpreadConstraints...)
			for k := range scaled {
				scaled[k].spec.ReplicaSpreadConstraints = in.topology.ReplicaSpread(in.pcs.Name, base.name)
			}
		}
		for k := range scaled {
			scaled[k].spec.ReplicaSpreadConstraints = append(scaled[k].spec.ReplicaSpreadConstraints, sgSpread[scaled[k].name]...)
		}
		base.spec.AffinityGroups, base.spec.AntiAffinityGroups = in.topology.RoleAffinity(roles)
		base.spec.AntiAffinityGroups = append(base.spec.AntiAffinityGroups, apart...)
		gangs = append(gangs, base)
		gangs = append(gangs, scaled...)
	}
	for k := range gangs {
		gangs[k].spec.PriorityClassName = t.PriorityClassName
	}
	return gangs
}

// addGroup adds the PodGroup of one PodClique to the gang.
func (g *plannedGang) addGroup(in gangPlanInput, pclqName string, clique *corev1alpha1.PodCliqueTemplateSpec) {
	spec := &clique.Spec
	pclq, exists := in.pclqs[pclqName]
	if exists {
		spec = &pclq.Spec
	}
	names := in.pods[g.name][pclqName]
	refs := make([]schedv1alpha1.NamespacedName, 0, len(names))
	for _, n := range names {
		refs = append(refs, schedv1alpha1.NamespacedName{Namespace: in.pcs.Namespace, Name: n})
	}
	// Sorted so that a PodGang only changes when its members do.
	sort.Slice(refs, func(a, b int) bool { return refs[a].Name < refs[b].Name })
	group := schedv1alpha1.PodGroup{
		Name:          pclqName,
		PodReferences: refs,
		MinReplicas:   corev1alpha1.MinAvailableOf(spec),
	}
	if tc := in.topology.Cliques[clique.Name]; tc != nil {
		group.TopologyConstraint = tc.DeepCopy()
	}
	group.Slices = in.topology.PodGroupSlices(clique.Name, spec.Replicas)
	g.spec.PodGroups = append(g.spec.PodGroups, group)
	g.complete = g.complete && exists && int32(len(refs)) >= spec.Replicas
	if exists && (g.firstClique.IsZero() || pclq.CreationTimestamp.Time.Before(g.firstClique)) {
		g.firstClique = pclq.CreationTimestamp.Time
	}
	if t, ok := in.firstPod[g.name]; ok {
		g.firstPod = t
	}
	if t, ok := in.lastPod[g.name]; ok {
		g.lastPod = t
	}
	g.completeGrace = in.completeGrace
}

// podsByGang groups live pod names by their PodGang and PodClique labels, and finds each
// PodGang's oldest and newest pods.
func podsByGang(pods []podRef) (names map[string]map[string][]string, first, last map[string]time.Time) {
	names, first, last = map[string]map[string][]string{}, map[string]time.Time{}, map[string]time.Time{}
	for _, p := range pods {
		if names[p.gang] == nil {
			names[p.gang] = map[string][]string{}
		}
		names[p.gang][p.pclq] = append(names[p.gang][p.pclq], p.name)
		if t, ok := first[p.gang]; !ok || p.created.Before(t) {
			first[p.gang] = p.created
		}
		if t, ok := last[p.gang]; !ok || p.created.After(t) {
			last[p.gang] = p.created
		}
	}
	return names, first, last
}

// podRef is what the PodGang planner needs of a pod.
type podRef struct {
	name, gang, pclq string
	created          time.Time
}
