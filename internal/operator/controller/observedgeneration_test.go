package controller_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// refuseCreates makes the apiserver refuse every create of PodCliques and pods in the test
// namespace (a ValidatingAdmissionPolicy, so no webhook server is needed) and waits until it is
// enforced. The returned func lifts the refusal.
func (e *env) refuseCreates() (lift func()) {
	e.t.Helper()
	name := "refuse-" + e.ns
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
				{RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
				{RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{corev1alpha1.SchemeGroupVersion.Group}, APIVersions: []string{"*"}, Resources: []string{"podcliques"}}}},
			}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "creates are refused by the test"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: e.ns}}},
		},
	}
	e.create(policy)
	e.create(binding)
	lift = func() {
		_ = e.c.Delete(context.Background(), binding)
		_ = e.c.Delete(context.Background(), policy)
	}
	e.t.Cleanup(lift)
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "probe"}, Spec: podSpec()}
	e.eventually(func(c *assert.CollectT) {
		err := e.c.Create(e.ctx, probe.DeepCopy(), client.DryRunAll)
		assert.True(c, apierrors.IsInvalid(err) || apierrors.IsForbidden(err), "the policy refuses creates: %v", err)
	})
	return lift
}

// TestObservedGenerationWaitsForASuccessfulSync: a generation whose sync failed (the children
// it calls for are refused by admission) is not reported as observed by the PodCliqueSet or the
// scaling group; once the cause is removed, each catches up. A PodClique whose pods the
// apiserver refuses has acted on its spec: it reports the refusal (PodCreateFailed, with the
// apiserver's message) and observes the generation, as Dynamo waits for observedGeneration.
func TestObservedGenerationWaitsForASuccessfulSync(t *testing.T) {
	e := newEnv(t)
	pcs := disaggregated(e.ns, "obsgen", 1)
	e.create(pcs)
	pcsg := &corev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "obsgen-0-workers"}}
	pclq := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "obsgen-0-router"}}
	type observed struct{ generation, observed, conditionObserved int64 }
	read := func(c require.TestingT) map[string]observed {
		out := map[string]observed{}
		for _, obj := range []client.Object{pcs, pcsg, pclq} {
			require.NoError(c, e.c.Get(e.ctx, client.ObjectKeyFromObject(obj), obj))
		}
		// The condition each controller sets on every status write carries the generation that
		// write was computed from: it shows the new generation was reconciled.
		condGen := func(conds []metav1.Condition, t string) int64 {
			if cond := condition(conds, t); cond != nil {
				return cond.ObservedGeneration
			}
			return 0
		}
		out["PodCliqueSet"] = observed{pcs.Generation, ptr.Deref(pcs.Status.ObservedGeneration, 0), condGen(pcs.Status.Conditions, apicommon.ConditionReady)}
		out["PodCliqueScalingGroup"] = observed{pcsg.Generation, ptr.Deref(pcsg.Status.ObservedGeneration, 0),
			condGen(pcsg.Status.Conditions, apicommon.ConditionMinAvailableBreached)}
		out["PodClique"] = observed{pclq.Generation, ptr.Deref(pclq.Status.ObservedGeneration, 0),
			condGen(pclq.Status.Conditions, apicommon.ConditionPodCliqueScheduled)}
		return out
	}
	e.eventually(func(c *assert.CollectT) {
		for kind, o := range read(c) {
			assert.Equal(c, o.generation, o.observed, "%s converged", kind)
		}
	})
	before := read(t)

	lift := e.refuseCreates()
	// Each change calls for children the apiserver now refuses: a second PodCliqueSet replica
	// (its standalone PodCliques), a third scaling-group replica (its member PodCliques) and a
	// second router pod.
	e.update(pcs, func() { pcs.Spec.Replicas = 2 })
	e.scale(pcsg, 3)
	e.scale(pclq, 2)
	e.eventually(func(c *assert.CollectT) {
		for kind, o := range read(c) {
			require.Greater(c, o.generation, before[kind].generation, kind)
			assert.Equal(c, o.generation, o.conditionObserved, "%s: the new generation was reconciled", kind)
			if kind == "PodClique" {
				assert.Equal(c, o.generation, o.observed, "PodClique: refused pods are reported, and the generation observed")
				continue
			}
			assert.Equal(c, before[kind].observed, o.observed, "%s: a failed sync does not advance observedGeneration", kind)
		}
		assert.NotEmpty(c, pcs.Status.LastErrors, "the PodCliqueSet says why")
		if cond := condition(pclq.Status.Conditions, apicommon.ConditionPodCreateFailed); assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionTrue, cond.Status)
			assert.Contains(c, cond.Message, "creates are refused by the test")
		}
	})

	lift()
	e.eventually(func(c *assert.CollectT) {
		for kind, o := range read(c) {
			assert.Equal(c, o.generation, o.observed, "%s caught up once its children could be made", kind)
		}
		assert.Empty(c, pcs.Status.LastErrors)
		if cond := condition(pclq.Status.Conditions, apicommon.ConditionPodCreateFailed); assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
		}
	})
}
