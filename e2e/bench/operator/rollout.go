package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// Rollout rows: the disaggregated PodCliqueSet's rolling update at the default budget (one pod or
// group replica at a time) and at maxUnavailable 25%, against a Deployment's rolling update of
// the same number of pods at maxUnavailable 25% in the same run. Grove has no surge, so the
// Deployment gets none either (maxSurge 0): the same pods unavailable at once, the same room.

// kindDeploymentRollout is the Deployment rolling-update baseline's Result.Kind.
const kindDeploymentRollout = "deployment-rollout"

// rolloutPrefix starts the names of Grove's rollout rows.
const rolloutPrefix = "rolling update of the disaggregated PCS"

// deploymentRollout creates a Deployment of n pods, waits until they are ready, and measures its
// rolling update (a changed env var) at maxUnavailable 25%, maxSurge 0.
func (b *bench) deploymentRollout(ctx context.Context, n int) error {
	ns := fmt.Sprintf("deploy-rollout-%d", n)
	if err := b.namespace(ctx, ns); err != nil {
		return err
	}
	labels := map[string]string{"app": "deploy-rollout"}
	quarter := intstr.FromString("25%")
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deploy"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(n)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &quarter, MaxSurge: ptr.To(intstr.FromInt32(0))}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec(corev1.DefaultSchedulerName)},
		},
	}
	if err := b.admin.Create(ctx, d); err != nil {
		return err
	}
	if _, err := track(ctx, b.cache, expectation{ns: ns, want: n}, plainMilestones, time.Now(), groveTimeout, nil); err != nil {
		return fmt.Errorf("the Deployment of %d pods was never ready: %w", n, err)
	}
	old, err := b.podUIDs(ctx, ns)
	if err != nil {
		return err
	}
	err = b.measure(ctx, fmt.Sprintf("Deployment rolling update: %d pods at maxUnavailable 25%%, kube-scheduler", n), kindDeploymentRollout, n,
		plainMilestones, expectation{ns: ns, want: n, old: old}, 2*groveTimeout, func(ctx context.Context) error {
			cur := &appsv1.Deployment{}
			if err := b.admin.Get(ctx, client.ObjectKeyFromObject(d), cur); err != nil {
				return err
			}
			setRevision(cur.Spec.Template.Spec.Containers, "2")
			return b.admin.Update(ctx, cur)
		})
	if err != nil {
		return err
	}
	if err := b.admin.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		return err
	}
	return b.cleanPods(ctx, ns)
}

// rollDisagg measures one rolling update of the disaggregated PCS to revision, with the
// standalone clique and both scaling groups at maxUnavailable budget (nil: the default), and
// records the PodGangs' mean placement score before and after.
func (b *bench) rollDisagg(ctx context.Context, ns, name string, pods int, budget *intstr.IntOrString, revision string) error {
	if budget != nil {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			pcs := &corev1alpha1.PodCliqueSet{}
			if err := b.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pcs); err != nil {
				return err
			}
			// Not part of the pod template: this starts no update.
			for _, c := range pcs.Spec.Template.Cliques {
				if c.Name == "router" {
					c.RollingUpdate = &corev1alpha1.RollingUpdateConfiguration{MaxUnavailable: budget}
				}
			}
			for i := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
				pcs.Spec.Template.PodCliqueScalingGroupConfigs[i].RollingUpdate = &corev1alpha1.RollingUpdateConfiguration{MaxUnavailable: budget}
			}
			return b.admin.Update(ctx, pcs)
		})
		if err != nil {
			return err
		}
	}
	old, err := b.podUIDs(ctx, ns)
	if err != nil {
		return err
	}
	before, minBefore, _, err := b.placementScore(ctx, ns)
	if err != nil {
		return err
	}
	label := rolloutPrefix + " (default maxUnavailable 1)"
	if budget != nil {
		label = fmt.Sprintf("%s at maxUnavailable %s", rolloutPrefix, budget.String())
	}
	gen := &atomic.Int64{}
	stages := newStageTracker()
	err = b.measure(ctx, label, "grove", pods, growMilestones, expectation{ns: ns, want: pods, old: old, grove: true, generation: gen, stages: stages},
		2*groveTimeout, func(ctx context.Context) error { return b.updateTemplate(ctx, ns, name, revision, gen) })
	r := b.results[len(b.results)-1]
	if r.Stages = stages.result(); r.Stages != nil {
		fmt.Printf("   %s\n", r.Stages)
	}
	r.PlacementScoreBefore, r.PlacementScoreMinBefore = before, minBefore
	if after, minAfter, n, serr := b.placementScore(ctx, ns); serr == nil {
		r.PlacementScoreAfter, r.PlacementScoreMinAfter, r.PlacementScoredGangs = after, minAfter, n
	}
	fmt.Printf("   placement score (mean / min of %d PodGangs) before %s / %s, after %s / %s\n", r.PlacementScoredGangs,
		score(r.PlacementScoreBefore), score(r.PlacementScoreMinBefore), score(r.PlacementScoreAfter), score(r.PlacementScoreMinAfter))
	return err
}

// placementScore is the mean and the lowest status.placementScore of the namespace's PodGangs
// that have one, and how many have; nil when none has (gangs without a pack key get none). It
// is read once the rollout is over, every pod Ready: grove-scheduler scores a gang when it binds
// its quorum.
func (b *bench) placementScore(ctx context.Context, ns string) (mean, lowest *float64, n int, err error) {
	var list schedv1alpha1.PodGangList
	if err := b.admin.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, nil, 0, err
	}
	var sum float64
	for _, pg := range list.Items {
		s := pg.Status.PlacementScore
		if s == nil {
			continue
		}
		sum += *s
		n++
		if lowest == nil || *s < *lowest {
			lowest = ptr.To(*s)
		}
	}
	if n == 0 {
		return nil, nil, 0, nil
	}
	return ptr.To(sum / float64(n)), lowest, n, nil
}

func score(s *float64) string {
	if s == nil {
		return "–"
	}
	return fmt.Sprintf("%.2f", *s)
}

// setRevision sets (or adds) the BENCH_REVISION env var of every container.
func setRevision(containers []corev1.Container, revision string) {
	for i := range containers {
		env := containers[i].Env
		if j := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == "BENCH_REVISION" }); j >= 0 {
			env[j].Value = revision
		} else {
			env = append(env, corev1.EnvVar{Name: "BENCH_REVISION", Value: revision})
		}
		containers[i].Env = env
	}
}

// rolloutRatios compares each of Grove's rollout rows with the Deployment rolling update of the
// same pods (target: ready within 1.5× at maxUnavailable 25%). With every core busy in both, the
// ratio of the times is the ratio of the control plane's CPU: the two CPU columns say how much
// of it is grove-operator's own, and what the ratio would be if the operator cost nothing.
func (rep *Report) rolloutRatios() [][]string {
	var out [][]string
	for _, r := range rep.Results {
		if r.Kind != "grove" || !strings.HasPrefix(r.Name, rolloutPrefix) {
			continue
		}
		base := rep.baseline(kindDeploymentRollout, r.Pods)
		out = append(out, []string{r.Name, ratio(r, MReady, base, MReady), ratio(r, MAvailable, base, MReady),
			score(r.PlacementScoreBefore) + " / " + score(r.PlacementScoreMinBefore),
			score(r.PlacementScoreAfter) + " / " + score(r.PlacementScoreMinAfter),
			cpuRatio(r, base, ""), cpuRatio(r, base, "grove-operator")})
	}
	return out
}

// cpuRatio is the control plane's CPU seconds during r over those during base, leaving out the
// process named without (none when empty); "–" when either was not measured.
func cpuRatio(r, base *Result, without string) string {
	if base == nil {
		return "–"
	}
	a, b := cpuTotal(r, without), cpuTotal(base, without)
	if a == 0 || b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

var rolloutHeads = []string{"workload", "ready ÷ Deployment rollout ready", "PCS available ÷ Deployment rollout ready",
	"placement score before (mean / min)", "placement score after (mean / min)",
	"control-plane CPU ÷ Deployment rollout's", "the same without grove-operator's CPU"}
