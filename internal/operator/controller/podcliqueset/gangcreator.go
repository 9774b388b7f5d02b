package podcliqueset

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	grovemetrics "github.com/ai-dynamo/grove/internal/operator/metrics"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// gangCreator creates a PodGang the moment the pods of its replica are all there, one gang per
// request. The gang writer's passes plan every gang of a PodCliqueSet and write the due ones
// in batches: at hundreds of replicas a pass took 0.4-1.7 s while pods were being created, so
// gangs appeared in bursts, and so did the gate PATCHes that wait for them, above the gate
// lifter's QPS. The gang writer still owns every PodGang (updates, incomplete gangs, deletion,
// the PodCliqueSet's status); this is only its fast path for the create of a complete gang,
// through the same code, client and record of writes, so that the two never write one gang
// twice from a stale cache.
type gangCreator struct{ r *Reconciler }

func (c *gangCreator) setup(mgr ctrl.Manager, opts controller.Options) error {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return ctrl.NewControllerManagedBy(mgr).
		Named(GangCreatorName).
		WithOptions(opts).
		// Only creations: a gang completes when its last pod is created.
		Watches(&corev1.Pod{}, handler.Funcs{
			CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) {
				if gang := e.Object.GetLabels()[apicommon.LabelPodGang]; gang != "" && e.Object.GetLabels()[apicommon.LabelPartOfKey] != "" {
					q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: gang}})
				}
			},
		}).
		Complete(c)
}

// Reconcile creates the PodGang named by the request when it does not exist and its plan is
// complete; anything else is left to the gang writer.
func (c *gangCreator) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c.r.initWrites(nil)
	// Its own create first, then the cache: checked after the read, the record could clear in
	// between, and a gang the cache had not shown at the read was created again (AlreadyExists,
	// 30 of 165 gangs in the 1000-pod apply with the operator's informers lagging).
	if c.r.gangWrites.CreateUnseen(&schedv1alpha1.PodGang{}, req.NamespacedName) {
		return common.Requeue(), nil
	}
	existing := &schedv1alpha1.PodGang{}
	if err := c.r.Client.Get(ctx, req.NamespacedName, existing); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, err
	} else if err == nil {
		if common.IsTerminating(existing) {
			// A gang made again (a rolling update's scaling-group replica) whose pods came
			// before the old one was gone: no pod event will bring this request back.
			return reconcile.Result{RequeueAfter: gangRetry}, nil
		}
		return reconcile.Result{}, nil
	}
	res, err := c.create(ctx, req.NamespacedName)
	grovemetrics.ObserveReconcileError(GangCreatorName, err)
	return res, err
}

// create creates the absent PodGang when its plan is complete. Its writes are the gang
// writer's (the same record, under the PodCliqueSet): it plans only on a cache that shows every
// PodGang write made for the PodCliqueSet, so a gang a pass created a moment ago is not
// created again.
func (c *gangCreator) create(ctx context.Context, key types.NamespacedName) (reconcile.Result, error) {
	pods := &corev1.PodList{}
	if err := common.ListManaged(ctx, c.r.Client, pods, key.Namespace, map[string]string{apicommon.LabelPodGang: key.Name},
		apicommon.LabelPodGang, client.UnsafeDisableDeepCopy); err != nil || len(pods.Items) == 0 {
		return reconcile.Result{}, err
	}
	first := &pods.Items[0]
	replica, ok := common.IntLabel(first, apicommon.LabelPodCliqueSetReplicaIndex)
	if !ok {
		return reconcile.Result{}, nil
	}
	pcsKey := client.ObjectKey{Namespace: key.Namespace, Name: first.Labels[apicommon.LabelPartOfKey]}
	// Only this gang's create (its own or a pass's, checked in Reconcile) and the PodCliqueSet's
	// PodGang deletes must be in the cache before it is read: waiting for every PodGang write of
	// the PodCliqueSet, as its passes do, put each of hundreds of gangs of one PodCliqueSet back
	// every 20 ms while any other gang was written, and creating them cost more operator CPU
	// than anything else.
	if !c.r.gangWrites.DeletesShown(ctx, &corev1alpha1.PodCliqueSet{}, pcsKey) {
		return common.Requeue(), nil
	}
	stored := &corev1alpha1.PodCliqueSet{}
	if err := c.r.Client.Get(ctx, pcsKey, stored); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if common.IsTerminating(stored) {
		return reconcile.Result{}, nil
	}
	ctx = c.r.gangWrites.For(ctx, stored)
	st := c.r.newState(stored)
	if err := c.r.resolveTopology(ctx, st); err != nil {
		return reconcile.Result{}, nil // the gang writer reports it on the PodCliqueSet
	}
	in, err := c.gangInput(ctx, st, replica, key.Name, pods.Items)
	if err != nil {
		return reconcile.Result{}, err
	}
	for _, g := range planPodGangs(in) {
		if g.name != key.Name {
			continue
		}
		if !g.complete {
			return reconcile.Result{}, nil // the gang writer creates it after its grace
		}
		return reconcile.Result{}, (&podGangs{c.r}).apply(ctx, st, g, nil, c.r.now(), false) // a new PodGang reuses nothing
	}
	return reconcile.Result{}, nil
}

// gangInput is the plan input of one PodCliqueSet replica that is complete for one of its gangs:
// the replica's scaling groups, and that gang's PodCliques and pods. A replica of a
// disaggregated PodCliqueSet has hundreds of PodCliques, and reading them all at each of its
// pods' creations cost the operator a third more CPU in the 1000-pod apply.
func (c *gangCreator) gangInput(ctx context.Context, st *state, replica int, gang string, pods []corev1.Pod) (gangPlanInput, error) {
	in := gangPlanInput{pcs: st.pcs, pclqs: map[string]*corev1alpha1.PodClique{},
		pcsgs: map[string]*corev1alpha1.PodCliqueScalingGroup{}, topology: st.translated(), onlyReplica: &replica}
	t := &st.pcs.Spec.Template
	for gi := range t.PodCliqueScalingGroupConfigs {
		name := apicommon.PodCliqueScalingGroupName(st.pcs.Name, replica, t.PodCliqueScalingGroupConfigs[gi].Name)
		pcsg := &corev1alpha1.PodCliqueScalingGroup{}
		if err := c.r.Client.Get(ctx, client.ObjectKey{Namespace: st.pcs.Namespace, Name: name}, pcsg); client.IgnoreNotFound(err) != nil {
			return in, err
		} else if err == nil && metav1.IsControlledBy(pcsg, st.stored) {
			in.pcsgs[name] = pcsg
		}
	}
	// The gang's groups are its PodCliques' names, whether or not they exist yet.
	for _, g := range planPodGangs(in) {
		if g.name != gang {
			continue
		}
		for _, group := range g.spec.PodGroups {
			pclq := &corev1alpha1.PodClique{}
			if err := c.r.Client.Get(ctx, client.ObjectKey{Namespace: st.pcs.Namespace, Name: group.Name}, pclq); client.IgnoreNotFound(err) != nil {
				return in, err
			} else if err == nil && !common.IsTerminating(pclq) && pclq.Labels[apicommon.LabelPartOfKey] == st.pcs.Name {
				in.pclqs[group.Name] = pclq
			}
		}
	}
	in.pods, in.firstPod, in.lastPod = podsByGang(memberPods(pods, in.pclqs))
	return in, nil
}
