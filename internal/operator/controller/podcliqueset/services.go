package podcliqueset

import (
	"context"
	"errors"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// headlessServices keeps one headless Service per replica: it gives the replica's pods DNS
// names (<hostname>.<pcs>-<i>) so peers find each other.
type headlessServices struct{ r *Reconciler }

func (*headlessServices) Name() string { return "headless-service" }

func (c *headlessServices) Sync(ctx context.Context, st *state) error {
	owned, err := listOwned(ctx, c.r.Client, st.stored, &corev1.ServiceList{}, apicommon.ComponentHeadlessService)
	if err != nil {
		return err
	}
	wanted := map[string]bool{}
	for i := range int(st.pcs.Spec.Replicas) {
		wanted[apicommon.HeadlessServiceName(st.pcs.Name, i)] = true
	}
	errs := []error{deleteUnwanted(ctx, c.r.Client, owned, wanted)}
	have := map[string]bool{}
	for _, svc := range owned {
		have[svc.GetName()] = true
	}
	var missing []int
	for i := range int(st.pcs.Spec.Replicas) {
		if !have[apicommon.HeadlessServiceName(st.pcs.Name, i)] {
			missing = append(missing, i)
			continue
		}
		errs = append(errs, c.apply(ctx, st, i)) // a patch only when it drifted
	}
	// No pod waits for its Service to be scheduled, but the reconcile that creates them does
	// not reach the PodGangs until it is done: at most serviceCreatesPerSync per reconcile,
	// in slow-start batches, and the rest in the next one.
	if len(missing) > serviceCreatesPerSync {
		missing = missing[:serviceCreatesPerSync]
		st.requeueAfter(time.Millisecond)
	}
	_, err = common.SlowStart(ctx, len(missing), func(ctx context.Context, i int) error { return c.apply(ctx, st, missing[i]) })
	return errors.Join(append(errs, err)...)
}

// serviceCreatesPerSync bounds the Services one reconcile creates (half a second of writes
// at the shipped client QPS).
const serviceCreatesPerSync = 50

func (c *headlessServices) apply(ctx context.Context, st *state, replica int) error {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: apicommon.HeadlessServiceName(st.pcs.Name, replica), Namespace: st.pcs.Namespace}}
	// The name is the PodCliqueSet's and the replica index.
	_, err := common.CreateOrPatch(ctx, c.r.Client, child(st.stored, apicommon.ComponentHeadlessService, "metadata.name"), svc, func() error {
		svc.Labels = common.WithLabels(svc.Labels, common.ReplicaLabels(st.pcs.Name, apicommon.ComponentHeadlessService, replica))
		if svc.ResourceVersion == "" {
			svc.Spec.ClusterIP = corev1.ClusterIPNone
		}
		selector := apicommon.DefaultLabels(st.pcs.Name)
		selector[apicommon.LabelPodCliqueSetReplicaIndex] = strconv.Itoa(replica)
		svc.Spec.Selector = selector
		svc.Spec.PublishNotReadyAddresses = st.pcs.Spec.Template.HeadlessServiceConfig.PublishNotReadyAddresses
		return nil
	})
	return st.conflict(err)
}

func (c *headlessServices) Delete(ctx context.Context, st *state) error {
	return deleteOwned(ctx, c.r.Client, st.stored, &corev1.ServiceList{}, apicommon.ComponentHeadlessService)
}
