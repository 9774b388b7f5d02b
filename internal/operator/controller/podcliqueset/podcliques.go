package podcliqueset

import (
	"context"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// podCliques keeps the standalone PodCliques (cliques outside any scaling group), one per
// clique and replica. Members of scaling groups belong to their PodCliqueScalingGroup.
type podCliques struct{ r *Reconciler }

func (*podCliques) Name() string { return "podclique" }

func standaloneTargets(st *state) []common.PodCliqueTarget {
	pcs := st.pcs
	var targets []common.PodCliqueTarget
	for i := range int(pcs.Spec.Replicas) {
		for _, c := range pcs.Spec.Template.StandaloneCliques() {
			targets = append(targets, common.PodCliqueTarget{PCS: pcs, Replica: i, Clique: c, Hashes: st.templateHashes()})
		}
	}
	return targets
}

func (c *podCliques) Sync(ctx context.Context, st *state) error {
	pclqs, err := st.children.podCliques(ctx)
	if err != nil {
		return err
	}
	var owned []client.Object
	for i := range pclqs {
		if controlledAs(&pclqs[i], st.stored, apicommon.ComponentPCSPodClique) {
			owned = append(owned, &pclqs[i])
		}
	}
	targets := standaloneTargets(st)
	wanted := map[string]bool{}
	for _, t := range targets {
		wanted[t.Name()] = true
	}
	if anyUnwanted(owned, wanted) {
		st.children.wrote(childPodCliques)
	}
	errs := []error{deleteUnwanted(ctx, c.r.Client, owned, wanted)}
	// In slow-start batches, not one request after another: a PodCliqueSet of hundreds of
	// replicas otherwise waits for hundreds of round trips before its last clique exists.
	_, err = common.SlowStart(ctx, len(targets), func(ctx context.Context, i int) error {
		t := targets[i]
		pclq := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: t.Name(), Namespace: st.pcs.Namespace}}
		own := child(st.stored, apicommon.ComponentPCSPodClique, cliqueField(st.pcs, t.Clique.Name))
		res, err := common.CreateOrPatch(ctx, c.r.Client, own, pclq, func() error {
			common.MutatePodClique(pclq, t)
			return nil
		})
		err = st.conflict(err)
		if res != controllerutil.OperationResultNone {
			st.children.wrote(childPodCliques)
		}
		if err != nil {
			return fmt.Errorf("PodClique %s: %w", t.Name(), err)
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}

func (c *podCliques) Delete(ctx context.Context, st *state) error {
	return deleteOwned(ctx, c.r.Client, st.stored, &corev1alpha1.PodCliqueList{}, apicommon.ComponentPCSPodClique)
}

// scalingGroups keeps one PodCliqueScalingGroup per scaling group and replica. The template's
// replicas only seed a new group: afterwards they belong to its scale subresource.
type scalingGroups struct{ r *Reconciler }

func (*scalingGroups) Name() string { return "podcliquescalinggroup" }

func (c *scalingGroups) Sync(ctx context.Context, st *state) error {
	groups, err := st.children.ownedScalingGroups(ctx, st.stored)
	if err != nil {
		return err
	}
	owned := make([]client.Object, len(groups))
	for i, g := range groups {
		owned[i] = g
	}
	t := &st.pcs.Spec.Template
	wanted := map[string]bool{}
	for i := range int(st.pcs.Spec.Replicas) {
		for _, g := range t.PodCliqueScalingGroupConfigs {
			wanted[apicommon.PodCliqueScalingGroupName(st.pcs.Name, i, g.Name)] = true
		}
	}
	if anyUnwanted(owned, wanted) {
		st.children.wrote(childScalingGroups)
	}
	errs := []error{deleteUnwanted(ctx, c.r.Client, owned, wanted), c.memberConflicts(ctx, st, groups)}
	type target struct{ replica, config int }
	var targets []target
	for i := range int(st.pcs.Spec.Replicas) {
		for gi := range t.PodCliqueScalingGroupConfigs {
			targets = append(targets, target{i, gi})
		}
	}
	// In slow-start batches, as the PodCliques: each group's create is independent.
	_, err = common.SlowStart(ctx, len(targets), func(ctx context.Context, n int) error {
		i, g := targets[n].replica, &t.PodCliqueScalingGroupConfigs[targets[n].config]
		pcsg := &corev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{
			Name: apicommon.PodCliqueScalingGroupName(st.pcs.Name, i, g.Name), Namespace: st.pcs.Namespace}}
		own := child(st.stored, apicommon.ComponentPodCliqueScalingGroup, scalingGroupField(targets[n].config))
		res, err := common.CreateOrPatch(ctx, c.r.Client, own, pcsg, func() error {
			pcsg.Labels = common.WithLabels(pcsg.Labels, common.ReplicaLabels(st.pcs.Name, apicommon.ComponentPodCliqueScalingGroup, i))
			for k, v := range g.Annotations {
				if pcsg.Annotations == nil {
					pcsg.Annotations = map[string]string{}
				}
				pcsg.Annotations[k] = v
			}
			if pcsg.ResourceVersion == "" {
				pcsg.Spec.Replicas = corev1alpha1.ScalingGroupReplicas(g)
				// Created with its controller's finalizer, which then need not patch it in.
				controllerutil.AddFinalizer(pcsg, apicommon.FinalizerPodCliqueScalingGroup)
			}
			minAvailable := corev1alpha1.ScalingGroupMinAvailable(g)
			pcsg.Spec.MinAvailable = &minAvailable
			pcsg.Spec.CliqueNames = append([]string(nil), g.CliqueNames...)
			return nil
		})
		err = st.conflict(err)
		if res != controllerutil.OperationResultNone {
			st.children.wrote(childScalingGroups)
		}
		if err != nil {
			return fmt.Errorf("PodCliqueScalingGroup %s: %w", pcsg.Name, err)
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}

// memberConflicts reports, on the PodCliqueSet, the member PodCliques of its scaling groups whose
// names are held by PodCliques Grove did not create (the groups' controller leaves them alone
// and says so on the group). Only names no member of the group holds are looked up, in the
// cache.
func (c *scalingGroups) memberConflicts(ctx context.Context, st *state, groups []*corev1alpha1.PodCliqueScalingGroup) error {
	pclqs, err := st.children.podCliques(ctx)
	if err != nil {
		return err
	}
	members := map[string]bool{}
	for i := range pclqs {
		if ref := metav1.GetControllerOf(&pclqs[i]); ref != nil && ref.Kind == "PodCliqueScalingGroup" {
			members[pclqs[i].Name] = true
		}
	}
	for _, g := range groups {
		replica, _ := common.IntLabel(g, apicommon.LabelPodCliqueSetReplicaIndex)
		gi := slices.IndexFunc(st.pcs.Spec.Template.PodCliqueScalingGroupConfigs, func(cfg corev1alpha1.PodCliqueScalingGroupConfig) bool {
			return apicommon.PodCliqueScalingGroupName(st.pcs.Name, replica, cfg.Name) == g.Name
		})
		for j := range int(g.Spec.Replicas) {
			for _, clique := range g.Spec.CliqueNames {
				name := apicommon.ScalingGroupPodCliqueName(g.Name, j, clique)
				if members[name] {
					continue
				}
				if err := c.checkMember(ctx, st, g, gi, clique, name); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkMember records a conflict when a PodClique Grove did not create holds a member's name.
func (c *scalingGroups) checkMember(ctx context.Context, st *state, g *corev1alpha1.PodCliqueScalingGroup, gi int, clique, name string) error {
	other := &corev1alpha1.PodClique{}
	if err := c.r.Client.Get(ctx, client.ObjectKey{Namespace: g.Namespace, Name: name}, other); err != nil {
		return client.IgnoreNotFound(err)
	}
	own := common.Child{Owner: g, PodCliqueSet: st.pcs.Name, Component: apicommon.ComponentPCSGPodClique,
		Field: fmt.Sprintf("%s, %s", scalingGroupField(gi), cliqueField(st.pcs, clique))}
	if own.Owns(other) {
		return nil
	}
	return st.conflict(own.Conflict(other, c.r.Client.Scheme()))
}

func (c *scalingGroups) Delete(ctx context.Context, st *state) error {
	return deleteOwned(ctx, c.r.Client, st.stored, &corev1alpha1.PodCliqueScalingGroupList{}, apicommon.ComponentPodCliqueScalingGroup)
}

// cliqueField is the path of a clique's name in the PodCliqueSet, for conflict reports.
func cliqueField(pcs *corev1alpha1.PodCliqueSet, clique string) string {
	for i, c := range pcs.Spec.Template.Cliques {
		if c != nil && c.Name == clique {
			return fmt.Sprintf("spec.template.cliques[%d].name", i)
		}
	}
	return "spec.template.cliques"
}

// scalingGroupField is the path of a scaling group's name in the PodCliqueSet.
func scalingGroupField(i int) string {
	return fmt.Sprintf("spec.template.podCliqueScalingGroups[%d].name", i)
}
