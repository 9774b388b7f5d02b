package webhook

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/controller/podclique"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// Pod admission by the apiserver (what only the cluster knows).
//
// Kubernetes' pod validation run in the webhook (podspec.go) catches what the pod alone
// decides. What the cluster decides is only known to the apiserver: the priority admission
// plugin (priority and preemptionPolicy must not be set, the PriorityClass must exist), the
// RuntimeClass plugin (the class must exist; overhead needs one), LimitRanges, Pod Security
// admission, --allow-privileged, and the cluster's own pod webhooks (policy engines). The
// webhook asks it: a server-side dry-run create of the first pod of each clique, built by the
// operator's own pod builder (podclique.SamplePod), so it is exactly what the operator would
// create, under the operator's identity, which is the one that will create the pods.
//
// What the dry-run does not decide:
//   - a ServiceAccount that does not exist yet is not refused (NVIDIA Dynamo creates it next to
//     the PodCliqueSet): it is a warning, and the PodClique reports PodCreateFailed until the
//     ServiceAccount appears;
//   - what can change by itself (an exceeded ResourceQuota, a namespace being deleted, a pod
//     webhook that does not support dry-run, a timeout) is a warning, never a refusal.
//
// Messages are the apiserver's admission messages about the pod, which the operator would
// otherwise put on the PodClique's events and conditions, readable by the same user: the
// dry-run tells the author nothing they would not learn from their own PodClique.

// dryRunBudget bounds all dry-runs of one admission request (the webhook's timeout is 10 s).
const dryRunBudget = 4 * time.Second

// dryRunParallel bounds the dry-runs of one admission request under way at once.
const dryRunParallel = 8

// dryRunPods dry-runs the first pod of every clique whose pod template differs from old's
// (every clique when old is nil) and returns the refusals as field errors on the PodCliqueSet
// and what could not be decided as warnings.
func (v *PodCliqueSetValidator) dryRunPods(ctx context.Context, pcs, old *corev1alpha1.PodCliqueSet) ([]string, field.ErrorList) {
	if v.Client == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, dryRunBudget)
	defer cancel()
	cp := field.NewPath("spec", "template", "cliques")
	type result struct {
		warnings []string
		errs     field.ErrorList
	}
	results := make([]result, len(pcs.Spec.Template.Cliques))
	sem := make(chan struct{}, dryRunParallel)
	var wg sync.WaitGroup
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil || (old != nil && !podTemplateChanged(pcs, old, c)) {
			continue
		}
		b, ok := v.Backends.Get(c.Spec.PodSpec.SchedulerName)
		if !ok {
			continue // refused by validateBackend
		}
		pod, err := podclique.SamplePod(pcs, c, b)
		if err != nil {
			results[i].errs = field.ErrorList{field.InternalError(cp.Index(i), err)}
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			err := v.Client.Create(ctx, pod, client.DryRunAll)
			w, errs := podCreateErrors(err, pcs, c, cp.Index(i))
			results[i] = result{w, errs}
		})
	}
	wg.Wait()
	var warnings []string
	var errs field.ErrorList
	for _, r := range results {
		errs = append(errs, r.errs...)
		for _, w := range r.warnings {
			if !slices.Contains(warnings, w) {
				warnings = append(warnings, w)
			}
		}
	}
	return warnings, errs
}

// podTemplateChanged reports whether a clique's pods would differ from those of old's clique
// of the same name: only then may an update be refused for them (scaling never is).
func podTemplateChanged(pcs, old *corev1alpha1.PodCliqueSet, c *corev1alpha1.PodCliqueTemplateSpec) bool {
	o := old.Spec.Template.Clique(c.Name)
	if o == nil {
		return true
	}
	return pcs.Spec.Template.PriorityClassName != old.Spec.Template.PriorityClassName ||
		!apiequality.Semantic.DeepEqual(c.Spec.PodSpec, o.Spec.PodSpec) ||
		!apiequality.Semantic.DeepEqual(c.Labels, o.Labels) ||
		!apiequality.Semantic.DeepEqual(c.Annotations, o.Annotations)
}

var (
	msgServiceAccount    = regexp.MustCompile(`error looking up service account ([^ :]+)`)
	msgPriority          = regexp.MustCompile(`integer value of priority .* must not be provided`)
	msgPreemptionPolicy  = regexp.MustCompile(`(?i)value of preemptionPolicy .* must not be provided`)
	msgPriorityClass     = regexp.MustCompile(`no PriorityClass with name .* was found`)
	msgOverhead          = regexp.MustCompile(`(?i)overhead`)
	msgRuntimeClass      = regexp.MustCompile(`(?i)RuntimeClass`)
	msgLimitRange        = regexp.MustCompile(`(?i)(maximum|minimum) .* (usage|limit|request)|limit to request ratio|must be less than or equal to .* limit`)
	msgTransient         = regexp.MustCompile(`(?i)exceeded quota|is being terminated|does not support dry run|failed calling webhook`)
	msgPodForbiddenLabel = regexp.MustCompile(`^pods? "[^"]*" is forbidden: `)
)

// podCreateErrors turns the apiserver's answer to the dry-run into field errors on the clique
// at p (refusals) and warnings (what may change by itself, or could not be checked).
func podCreateErrors(err error, pcs *corev1alpha1.PodCliqueSet, c *corev1alpha1.PodCliqueTemplateSpec, p *field.Path) ([]string, field.ErrorList) {
	if err == nil {
		return nil, nil
	}
	sp := p.Child("spec", "podSpec")
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return []string{fmt.Sprintf("%s: could not check the clique's pods with the apiserver: %v", p, err)}, nil
	}
	st := status.Status()
	msg := msgPodForbiddenLabel.ReplaceAllString(st.Message, "")
	switch {
	case apierrors.IsInvalid(err) && st.Details != nil && len(st.Details.Causes) > 0:
		var errs field.ErrorList
		for _, cause := range st.Details.Causes {
			errs = append(errs, &field.Error{
				Type:     field.ErrorType(cause.Type),
				Field:    podFieldPath(cause.Field, p),
				BadValue: field.OmitValueType{},
				Detail:   strings.TrimPrefix(cause.Message, field.ErrorType(cause.Type).String()+": ") + " (refused by the apiserver for the clique's pods)",
			})
		}
		return nil, errs
	case !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err):
		return []string{fmt.Sprintf("%s: could not check the clique's pods with the apiserver: %s", p, st.Message)}, nil
	case msgServiceAccount.MatchString(msg) && c.Spec.PodSpec.ServiceAccountName == "":
		// The namespace's default ServiceAccount, which the cluster makes itself.
		return nil, nil
	case msgServiceAccount.MatchString(msg):
		return []string{fmt.Sprintf("%s: ServiceAccount %q does not exist (yet): the clique's pods are created once it does; until then its PodClique reports PodCreateFailed. The apiserver's other pod checks are made then",
			sp.Child("serviceAccountName"), c.Spec.PodSpec.ServiceAccountName)}, nil
	case msgTransient.MatchString(msg):
		return []string{fmt.Sprintf("%s: the apiserver would not create the clique's pods now: %s", p, msg)}, nil
	}
	path := sp
	switch {
	case msgPriority.MatchString(msg):
		path = sp.Child("priority")
	case msgPreemptionPolicy.MatchString(msg):
		path = sp.Child("preemptionPolicy")
	case msgPriorityClass.MatchString(msg):
		path = sp.Child("priorityClassName")
		if c.Spec.PodSpec.PriorityClassName == "" {
			path = field.NewPath("spec", "template", "priorityClassName")
		}
	case msgOverhead.MatchString(msg) && c.Spec.PodSpec.Overhead != nil:
		path = sp.Child("overhead")
	case msgRuntimeClass.MatchString(msg) && c.Spec.PodSpec.RuntimeClassName != nil:
		path = sp.Child("runtimeClassName")
	case msgLimitRange.MatchString(msg):
		path = sp.Child("containers")
	}
	return nil, field.ErrorList{field.Forbidden(path, "the apiserver refuses the clique's pods: "+msg)}
}

// podFieldPath maps a field of the dry-run pod onto the PodCliqueSet: spec.* into the clique's
// podSpec, metadata labels and annotations onto the clique's, anything else onto the clique.
func podFieldPath(podField string, clique *field.Path) string {
	switch {
	case strings.HasPrefix(podField, "spec."):
		return clique.Child("spec", "podSpec").String() + podField[len("spec"):]
	case strings.HasPrefix(podField, "metadata.labels"):
		return clique.String() + ".labels" + podField[len("metadata.labels"):]
	case strings.HasPrefix(podField, "metadata.annotations"):
		return clique.String() + ".annotations" + podField[len("metadata.annotations"):]
	}
	return clique.String()
}
