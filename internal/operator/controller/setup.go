// Package controller wires grove-operator's controllers into a manager: PodCliqueSet,
// PodCliqueScalingGroup, PodClique and the managed ClusterTopologies, all sharing one scheduler
// backend registry.
package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/clustertopology"
	"github.com/ai-dynamo/grove/internal/operator/controller/clustertopologybinding"
	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/operator/controller/expectations"
	"github.com/ai-dynamo/grove/internal/operator/controller/managedtopology"
	"github.com/ai-dynamo/grove/internal/operator/controller/podclique"
	"github.com/ai-dynamo/grove/internal/operator/controller/podcliquescalinggroup"
	"github.com/ai-dynamo/grove/internal/operator/controller/podcliqueset"
	"github.com/ai-dynamo/grove/internal/operator/resourceclaim"
)

// EventSource is the reporting controller of grove-operator's events.
const EventSource = "grove-operator"

// CacheByObject narrows the informer cache: grove-operator only ever reads the pods it
// manages, so it does not hold every pod of the cluster in memory. It reads no Secret at all.
func CacheByObject() map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Label: labels.SelectorFromSet(labels.Set{apicommon.LabelManagedByKey: apicommon.LabelManagedByValue})},
		// Only the ResourceClaims of resource sharing, not those the scheduler makes for pods.
		&resourcev1.ResourceClaim{}: {Label: labels.SelectorFromSet(labels.Set{apicommon.LabelManagedByKey: apicommon.LabelManagedByValue})},
	}
}

// Options tune the controllers beyond the configuration (tests run several managers in one
// process and skip controller-name validation).
type Options struct {
	SkipNameValidation bool
	// ClientFor, when set, gives each controller a client of its own, with its own client-side
	// rate limiters (as kube-controller-manager gives each controller its own client): the
	// PodClique controller's pod writes then never queue behind the PodCliqueSet controller's
	// PodClique and PodGang writes. The manager's client otherwise.
	ClientFor func(controllerName string) (client.Client, error)
}

// SetupWithManager initialises the scheduler backends and registers every controller.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration, registry *backend.Registry, opts Options) error {
	dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("creating discovery client: %w", err)
	}
	recorder := mgr.GetEventRecorder(EventSource)
	// Backends initialise before the cache starts: they read through the API reader.
	if err := registry.Init(ctx, backend.InitContext{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Discovery: dc, Recorder: recorder,
		Logger: mgr.GetLogger().WithName("backend"),
	}, cfg.Scheduler); err != nil {
		return err
	}
	if err := common.RegisterLabelIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	controllerOpts := func(c configv1alpha1.ConcurrencyConfiguration) controller.Options {
		o := controller.Options{MaxConcurrentReconciles: configv1alpha1.DefaultConcurrentSyncs}
		if c.ConcurrentSyncs != nil {
			o.MaxConcurrentReconciles = *c.ConcurrentSyncs
		}
		if opts.SkipNameValidation {
			o.SkipNameValidation = &opts.SkipNameValidation
		}
		return o
	}
	// One client per writer (its name is the client's user agent).
	writers := []string{podcliqueset.ControllerName, podcliqueset.GangWriterName, podcliqueset.StatusWriterName, podcliquescalinggroup.ControllerName,
		podclique.ControllerName, podclique.GateControllerName, podclique.StatusWriterName}
	clients := make(map[string]client.Client, len(writers))
	for _, name := range writers {
		clients[name] = mgr.GetClient()
		if opts.ClientFor != nil {
			c, err := opts.ClientFor(name)
			if err != nil {
				return err
			}
			clients[name] = c
		}
	}
	pcsClient, gangClient, pcsgClient := clients[podcliqueset.ControllerName], clients[podcliqueset.GangWriterName], clients[podcliquescalinggroup.ControllerName]
	pclqClient, gateClient, pclqStatusClient := clients[podclique.ControllerName], clients[podclique.GateControllerName], clients[podclique.StatusWriterName]
	c := cfg.Controllers
	claims := &resourceclaim.Syncer{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: recorder}
	if err := (&podcliqueset.Reconciler{
		Client:       client.WithFieldOwner(pcsClient, apicommon.OperatorFieldManager),
		GangClient:   client.WithFieldOwner(gangClient, apicommon.OperatorFieldManager),
		StatusClient: client.WithFieldOwner(clients[podcliqueset.StatusWriterName], apicommon.OperatorFieldManager),
		Registry:     registry, Recorder: recorder, TopologyAwareScheduling: cfg.TopologyAwareScheduling,
		Claims: claims, PartialBindingTimeout: cfg.PodGang.PartialBindingTimeout.Duration,
		NodeFailure: cfg.NodeFailure,
	}).SetupWithManager(ctx, mgr, controllerOpts(c.PodCliqueSet)); err != nil {
		return fmt.Errorf("setting up the PodCliqueSet controller: %w", err)
	}
	if err := (&podcliquescalinggroup.Reconciler{Client: client.WithFieldOwner(pcsgClient, apicommon.ScalingGroupFieldManager), Claims: claims, Recorder: recorder}).
		SetupWithManager(mgr, controllerOpts(c.PodCliqueScalingGroup)); err != nil {
		return fmt.Errorf("setting up the PodCliqueScalingGroup controller: %w", err)
	}
	if err := (&podclique.Reconciler{
		Client:       client.WithFieldOwner(pclqClient, apicommon.PodCliqueFieldManager),
		GateClient:   client.WithFieldOwner(gateClient, apicommon.PodCliqueFieldManager),
		StatusClient: client.WithFieldOwner(pclqStatusClient, apicommon.PodCliqueFieldManager),
		Registry:     registry, Recorder: recorder, Expectations: expectations.New(expectations.DefaultTTL),
		Claims:             claims,
		StartupWaiterImage: cfg.StartupWaiter.Image,
	}).SetupWithManager(mgr, controllerOpts(c.PodClique)); err != nil {
		return fmt.Errorf("setting up the PodClique controller: %w", err)
	}
	// Upstream's ClusterTopologyBinding, where its CRD is installed, becomes a ClusterTopology.
	if _, err := mgr.GetRESTMapper().KindFor(corev1alpha1.SchemeGroupVersion.WithResource("clustertopologybindings")); err == nil {
		var topologyAware []string
		for _, b := range registry.TopologyAware() {
			topologyAware = append(topologyAware, string(b.Name()))
		}
		if err := (&clustertopologybinding.Reconciler{Client: mgr.GetClient(), TopologyAware: topologyAware}).
			SetupWithManager(mgr, controllerOpts(c.ClusterTopology)); err != nil {
			return fmt.Errorf("setting up the ClusterTopologyBinding controller: %w", err)
		}
	} else if !meta.IsNoMatchError(err) {
		return fmt.Errorf("resolving clustertopologybindings: %w", err)
	} else {
		mgr.GetLogger().Info("ClusterTopologyBindings are not translated: their CRD is not installed")
	}
	if len(registry.TopologyAware()) > 0 {
		// Keeps every topology-aware backend's topology object in step with each ClusterTopology.
		if err := clustertopology.SetupWithManager(mgr, registry, c.ClusterTopology); err != nil {
			return fmt.Errorf("setting up the ClusterTopology controller: %w", err)
		}
	}
	if tas := cfg.TopologyAwareScheduling; tas.Enabled && len(tas.Profiles) > 0 {
		if err := (&managedtopology.Reconciler{Client: mgr.GetClient(), Profiles: tas.Profiles}).
			SetupWithManager(mgr, controllerOpts(c.ClusterTopology)); err != nil {
			return fmt.Errorf("setting up the managed ClusterTopology controller: %w", err)
		}
	}
	return nil
}
