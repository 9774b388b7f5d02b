package volcano

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// Where the queue is written, in the order it is read: the PodCliqueSet's
// scheduling.grove.io/volcano-queue label or annotation, then the clique templates' (upstream
// Grove reads the annotations of both; Dynamo writes the key on the PodCliqueSet), then the
// profile's defaultQueue. All pods of a PodGang run in one queue, so every place that names a
// queue must name the same one.

// ResolveQueue is the Volcano queue of a PodCliqueSet's PodGangs. errs point at every place that
// names another queue and at malformed queue names.
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
					"must equal the PodCliqueSet's Volcano queue %q (%s): Volcano schedules all pods of a PodGang in one queue", queue, at)))
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
		return defaultQueue, nil
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
				"the cliques name different Volcano queues %q; Volcano schedules all pods of a PodGang in one queue: set the queue on the PodCliqueSet or make the cliques agree (%s is %q)",
				names, first.at, first.queue)))
		}
	}
	return "", errs
}

// queueOf reads the queue from one object's labels and annotations; at is where it was found.
// The label and the annotation may both be set but must agree.
func queueOf(labels, annotations map[string]string, meta *field.Path) (queue string, at *field.Path, errs field.ErrorList) {
	lp := meta.Child("labels").Key(KeyQueue)
	ap := meta.Child("annotations").Key(KeyQueue)
	l, inLabels := labels[KeyQueue]
	a, inAnnotations := annotations[KeyQueue]
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
		return "", nil, field.ErrorList{field.Invalid(ap, a, fmt.Sprintf("must equal the label %s=%q on the same object", KeyQueue, l))}
	case inLabels:
		return l, lp, nil
	case inAnnotations:
		return a, ap, nil
	}
	return "", nil, nil
}

// validateQueueName: a Volcano queue is a cluster-scoped object; PodGroup spec.queue takes a
// DNS-1123 subdomain.
func validateQueueName(q string, p *field.Path) field.ErrorList {
	if q == "" {
		return field.ErrorList{field.Invalid(p, q, "a Volcano queue name must not be empty")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(q) {
		errs = append(errs, field.Invalid(p, q, "a Volcano queue name must be a DNS-1123 subdomain: "+msg))
	}
	return errs
}

// checkQueue warns when the queue does not exist or is not Open: Volcano leaves the PodGroups
// of such a queue Pending. It is a warning, not a refusal (as for KAI's queues), because the
// queue may be created after the workload.
func (b *Backend) checkQueue(ctx context.Context, queue string) []string {
	if b.reader == nil {
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(QueueGVK)
	err := b.reader.Get(ctx, client.ObjectKey{Name: queue}, u)
	switch {
	case meta.IsNoMatchError(err):
		return []string{fmt.Sprintf("the cluster serves no Volcano Queue API (%s): is Volcano installed? The PodGroups of this PodCliqueSet stay unscheduled until it is", QueueGVK.GroupVersion())}
	case apierrors.IsNotFound(err):
		return []string{fmt.Sprintf("Volcano queue %q does not exist: Volcano schedules no PodGroup of this PodCliqueSet until it is created", queue)}
	case err != nil:
		b.log.V(1).Info("could not read the Volcano queue", "queue", queue, "error", err.Error())
		return nil
	}
	if state, _, _ := unstructured.NestedString(u.Object, "status", "state"); state != "" && state != "Open" {
		return []string{fmt.Sprintf("Volcano queue %q is %s, not Open: Volcano schedules no new PodGroup in it", queue, state)}
	}
	return nil
}

// queueOfPodGang: the operator annotates each PodGang with its queue; a PodGang of a
// PodCliqueSet that carries the key as a label has it as a label too.
func queueOfPodGang(annotations, labels map[string]string, defaultQueue string) string {
	if q := annotations[KeyQueue]; q != "" {
		return q
	}
	if q := labels[KeyQueue]; q != "" {
		return q
	}
	return defaultQueue
}
