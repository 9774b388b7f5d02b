package kai

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// Where a KAI queue is written, in the order they are read: the PodCliqueSet's
// kai.scheduler/queue label, the same key as its annotation, then the clique templates' label
// or annotation (NVIDIA Dynamo writes the queue on the cliques only), then the profile's
// defaultQueue. All pods of a PodGang run in one queue, so every place that names a queue must
// name the same one.

// ResolveQueue is the KAI queue of a PodCliqueSet's PodGangs. errs point at every place that
// names another queue, an empty or malformed queue, or at the missing queue.
func ResolveQueue(pcs *corev1alpha1.PodCliqueSet, defaultQueue string) (string, field.ErrorList) {
	queue, at, errs := queueOf(pcs.Labels, pcs.Annotations, field.NewPath("metadata"))
	type named struct {
		queue string
		at    *field.Path
	}
	var cliques []named
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		q, p, cerrs := queueOf(c.Labels, c.Annotations, field.NewPath("spec", "template", "cliques").Index(i))
		errs = append(errs, cerrs...)
		if q != "" {
			cliques = append(cliques, named{q, p})
		}
	}
	if len(errs) > 0 {
		return "", errs
	}
	if queue != "" {
		for _, c := range cliques {
			if c.queue != queue {
				errs = append(errs, field.Invalid(c.at, c.queue, fmt.Sprintf(
					"must equal the PodCliqueSet's KAI queue %q (%s): kai-scheduler schedules all pods of a PodGang in one queue", queue, at)))
			}
		}
		return queue, errs
	}
	distinct := map[string]bool{}
	for _, c := range cliques {
		distinct[c.queue] = true
	}
	switch len(distinct) {
	case 0:
		if defaultQueue != "" {
			return defaultQueue, nil
		}
		return "", field.ErrorList{field.Required(field.NewPath("metadata", "labels").Key(LabelQueue), fmt.Sprintf(
			"kai-scheduler schedules every PodGang in a KAI queue: label (or annotate) the PodCliqueSet or its cliques with %s=<queue>, or set defaultQueue in the kai-scheduler profile",
			LabelQueue))}
	case 1:
		return cliques[0].queue, nil
	}
	names := make([]string, 0, len(distinct))
	for q := range distinct {
		names = append(names, q)
	}
	sort.Strings(names)
	first := cliques[0]
	for _, c := range cliques[1:] {
		if c.queue != first.queue {
			errs = append(errs, field.Invalid(c.at, c.queue, fmt.Sprintf(
				"the cliques name different KAI queues %q; kai-scheduler schedules all pods of a PodGang in one queue: label the PodCliqueSet with the queue or make the cliques agree (%s is %q)",
				names, first.at, first.queue)))
		}
	}
	return "", errs
}

// queueOf reads the queue from one object's labels and annotations; at is where it was found.
// The label and the annotation may both be set but must agree.
func queueOf(labels, annotations map[string]string, meta *field.Path) (queue string, at *field.Path, errs field.ErrorList) {
	lp := meta.Child("labels").Key(LabelQueue)
	ap := meta.Child("annotations").Key(LabelQueue)
	l, inLabels := labels[LabelQueue]
	a, inAnnotations := annotations[LabelQueue]
	if inLabels {
		errs = append(errs, validateQueueName(l, lp)...)
	}
	if inAnnotations {
		errs = append(errs, validateQueueName(a, ap)...)
	}
	switch {
	case len(errs) > 0:
		return "", nil, errs
	case inLabels && inAnnotations && l != a:
		return "", nil, field.ErrorList{field.Invalid(ap, a, fmt.Sprintf("must equal the label %s=%q on the same object", LabelQueue, l))}
	case inLabels:
		return l, lp, nil
	case inAnnotations:
		return a, ap, nil
	}
	return "", nil, nil
}

// validateQueueName: a queue is also written as a label value on PodGangs and KAI PodGroups.
func validateQueueName(q string, p *field.Path) field.ErrorList {
	if q == "" {
		return field.ErrorList{field.Invalid(p, q, "a KAI queue name must not be empty")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsValidLabelValue(q) {
		errs = append(errs, field.Invalid(p, q, "a KAI queue name must be a valid label value: "+msg))
	}
	return errs
}
