package backend

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// Registry holds the backends enabled by OperatorConfiguration.scheduler.profiles.
type Registry struct {
	backends    map[configv1alpha1.SchedulerName]Backend
	defaultName configv1alpha1.SchedulerName
}

// NewRegistry builds the enabled backends from their factories. A profile without a
// factory is an error: the configuration names a backend this build does not have.
func NewRegistry(cfg configv1alpha1.SchedulerConfiguration, factories map[configv1alpha1.SchedulerName]Factory) (*Registry, error) {
	r := &Registry{backends: map[configv1alpha1.SchedulerName]Backend{}, defaultName: cfg.DefaultProfileName}
	for _, p := range cfg.Profiles {
		f, ok := factories[p.Name]
		if !ok {
			return nil, fmt.Errorf("scheduler profile %q: no such backend in this build", p.Name)
		}
		r.backends[p.Name] = f()
	}
	if _, ok := r.backends[r.defaultName]; !ok {
		return nil, fmt.Errorf("default scheduler profile %q is not enabled", r.defaultName)
	}
	return r, nil
}

// Init initialises every backend with its profile's configuration.
func (r *Registry) Init(ctx context.Context, ic InitContext, cfg configv1alpha1.SchedulerConfiguration) error {
	for _, p := range cfg.Profiles {
		bic := ic
		bic.Logger = ic.Logger.WithName(string(p.Name))
		if p.Config != nil {
			bic.Config = p.Config.Raw
		}
		if err := r.backends[p.Name].Init(ctx, bic); err != nil {
			return fmt.Errorf("initialising scheduler backend %q: %w", p.Name, err)
		}
	}
	return nil
}

// Default is the backend for pods without a schedulerName.
func (r *Registry) Default() Backend { return r.backends[r.defaultName] }

// Get returns an enabled backend by scheduler name ("" means the default).
func (r *Registry) Get(schedulerName string) (Backend, bool) {
	if schedulerName == "" {
		return r.Default(), true
	}
	b, ok := r.backends[configv1alpha1.SchedulerName(schedulerName)]
	return b, ok
}

// All returns the enabled backends, sorted by name.
func (r *Registry) All() []Backend {
	var bs []Backend
	for _, b := range r.backends {
		bs = append(bs, b)
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].Name() < bs[j].Name() })
	return bs
}

// TopologyAware returns the enabled topology-aware backends, sorted by name.
func (r *Registry) TopologyAware() []TopologyAwareBackend {
	var bs []TopologyAwareBackend
	for _, b := range r.All() {
		if tb, ok := b.(TopologyAwareBackend); ok {
			bs = append(bs, tb)
		}
	}
	return bs
}

// ForPodCliqueSet resolves the one backend of a PodCliqueSet: every clique's
// podSpec.schedulerName must name the same enabled backend ("" = default).
func (r *Registry) ForPodCliqueSet(pcs *corev1alpha1.PodCliqueSet) (Backend, field.ErrorList) {
	var chosen Backend
	var errs field.ErrorList
	cliques := field.NewPath("spec", "template", "cliques")
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		p := cliques.Index(i).Child("spec", "podSpec", "schedulerName")
		b, ok := r.Get(c.Spec.PodSpec.SchedulerName)
		if !ok {
			errs = append(errs, r.unavailable(p, c.Spec.PodSpec.SchedulerName))
			continue
		}
		if chosen != nil && b.Name() != chosen.Name() {
			errs = append(errs, field.Invalid(p, c.Spec.PodSpec.SchedulerName,
				fmt.Sprintf("all cliques must use one scheduler; other cliques use %q", chosen.Name())))
			continue
		}
		chosen = b
	}
	if chosen == nil && len(errs) == 0 {
		chosen = r.Default()
	}
	return chosen, errs
}

// unavailable explains a schedulerName without an enabled backend: a scheduler Grove has no
// backend for (named with the reason when known) or a backend this operator has not enabled.
func (r *Registry) unavailable(p *field.Path, name string) *field.Error {
	if slices.Contains(configv1alpha1.SupportedSchedulerNames, configv1alpha1.SchedulerName(name)) {
		return field.NotSupported(p, name, r.names())
	}
	supported := make([]string, 0, len(configv1alpha1.SupportedSchedulerNames))
	for _, n := range configv1alpha1.SupportedSchedulerNames {
		supported = append(supported, string(n))
	}
	why := "Grove has no backend for it"
	if reason, known := configv1alpha1.UnsupportedSchedulerNames[configv1alpha1.SchedulerName(name)]; known {
		why = reason
	}
	return field.Invalid(p, name, fmt.Sprintf("scheduler %q is not supported: %s. Grove's scheduler backends are %s; enabled in this operator: %s",
		name, why, strings.Join(supported, ", "), strings.Join(r.names(), ", ")))
}

func (r *Registry) names() []string {
	var ns []string
	for n := range r.backends {
		ns = append(ns, string(n))
	}
	sort.Strings(ns)
	return ns
}
