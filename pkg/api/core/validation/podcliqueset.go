package validation

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

var (
	startupTypes = []corev1alpha1.CliqueStartupType{
		corev1alpha1.CliqueStartupTypeAnyOrder, corev1alpha1.CliqueStartupTypeInOrder, corev1alpha1.CliqueStartupTypeExplicit,
	}
	updateStrategies = []corev1alpha1.UpdateStrategyType{corev1alpha1.RollingRecreateStrategy, corev1alpha1.CoherentStrategy, corev1alpha1.OnDeleteStrategy}
	// OnFailure is not offered: a gang member restarting in place is indistinguishable from a
	// healthy one to the gang accounting.
	restartPolicies = []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyNever}
)

var templatePath = field.NewPath("spec", "template")

// ValidatePodCliqueSet checks a (defaulted) PodCliqueSet on its own: everything except
// topology constraints (ValidateTopologyConstraints, which needs the ClusterTopology) and the
// scheduler backend. Warnings are for accepted but ineffective settings.
func ValidatePodCliqueSet(pcs *corev1alpha1.PodCliqueSet) (warnings []string, errs field.ErrorList) {
	errs = append(errs, validatePodCliqueSetName(pcs)...)
	spec := &pcs.Spec
	sp := field.NewPath("spec")
	errs = append(errs, validateReplicaBound(spec.Replicas, 0, sp.Child("replicas"))...)
	if spec.UpdateStrategy != nil && spec.UpdateStrategy.Type != "" && !slices.Contains(updateStrategies, spec.UpdateStrategy.Type) {
		errs = append(errs, field.NotSupported(sp.Child("updateStrategy", "type"), spec.UpdateStrategy.Type, updateStrategies))
	}
	t := &spec.Template
	if t.StartupType != nil && !slices.Contains(startupTypes, *t.StartupType) {
		errs = append(errs, field.NotSupported(templatePath.Child("cliqueStartupType"), *t.StartupType, startupTypes))
	}
	if t.PriorityClassName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(t.PriorityClassName) {
			errs = append(errs, field.Invalid(templatePath.Child("priorityClassName"), t.PriorityClassName, msg))
		}
	}
	if t.TerminationDelay != nil && t.TerminationDelay.Duration <= 0 {
		errs = append(errs, field.Invalid(templatePath.Child("terminationDelay"), t.TerminationDelay.Duration.String(), "must be a positive duration, e.g. 30s, 15m or 4h"))
	}
	w, cliqueErrs := validateCliques(t, pcs.Name)
	warnings = append(warnings, w...)
	errs = append(errs, cliqueErrs...)
	errs = append(errs, validateScalingGroups(t)...)
	errs = append(errs, validateRollingUpdates(pcs)...)
	errs = append(errs, validateGeneratedNameBudget(pcs)...)
	errs = append(errs, validateResourceSharing(t)...)
	return warnings, errs
}

func validatePodCliqueSetName(pcs *corev1alpha1.PodCliqueSet) field.ErrorList {
	// The name prefixes the per-replica headless Service "<pcs>-<i>", which must be a DNS-1035
	// label (it starts with a letter).
	name, p := pcs.Name, field.NewPath("metadata", "name")
	if name == "" {
		name, p = pcs.GenerateName, field.NewPath("metadata", "generateName")
	}
	if name == "" {
		return field.ErrorList{field.Required(field.NewPath("metadata", "name"), "")}
	}
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNS1035Label(name, p.String() == "metadata.generateName") {
		errs = append(errs, field.Invalid(p, name, msg+" (it prefixes the name of each replica's headless Service)"))
	}
	return errs
}

func validateCliques(t *corev1alpha1.PodCliqueSetTemplateSpec, pcsName string) (warnings []string, errs field.ErrorList) {
	cp := templatePath.Child("cliques")
	if len(t.Cliques) == 0 {
		errs = append(errs, field.Required(cp, "at least one clique is needed"))
	}
	explicit := t.StartupType != nil && *t.StartupType == corev1alpha1.CliqueStartupTypeExplicit
	names, roles := map[string]bool{}, map[string]bool{}
	for i, c := range t.Cliques {
		p := cp.Index(i)
		if c == nil {
			errs = append(errs, field.Required(p, "a clique must not be null"))
			continue
		}
		errs = append(errs, validateDNSLabel(c.Name, p.Child("name"))...)
		if c.Name != "" && names[c.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		}
		names[c.Name] = true
		errs = append(errs, validateCliqueMetadata(c.Labels, c.Annotations, pcsName, p)...)
		errs = append(errs, validateClaimEntries(t, pcsName, c, p.Child("spec", "podSpec", "resourceClaims"))...)
		sp := p.Child("spec")
		if c.Spec.RoleName == "" {
			errs = append(errs, field.Required(sp.Child("roleName"), ""))
		} else if roles[c.Spec.RoleName] {
			errs = append(errs, field.Duplicate(sp.Child("roleName"), c.Spec.RoleName))
		}
		roles[c.Spec.RoleName] = true
		errs = append(errs, validateCliqueSpec(&c.Spec, sp, t.ScalingGroupOf(c.Name) != nil)...)
		if len(c.Spec.StartsAfter) > 0 && !explicit {
			warnings = append(warnings, fmt.Sprintf("%s is ignored: it only orders cliques with cliqueStartupType %s",
				sp.Child("startsAfter"), corev1alpha1.CliqueStartupTypeExplicit))
		}
	}
	if explicit {
		errs = append(errs, validateStartsAfter(t.Cliques, cp)...)
	}
	return warnings, errs
}

func validateCliqueSpec(s *corev1alpha1.PodCliqueSpec, p *field.Path, inScalingGroup bool) field.ErrorList {
	var errs field.ErrorList
	if s.Replicas == 0 {
		// Typed clients send 0 for an unset field, so 0 cannot mean "default"; and a clique
		// without pods cannot be part of a gang. Refusing it beats silently running 1 pod.
		errs = append(errs, field.Invalid(p.Child("replicas"), s.Replicas, "must be at least 1: a clique without pods cannot be part of a gang (leave replicas out for the default of 1)"))
	} else {
		errs = append(errs, validateReplicaBound(s.Replicas, 1, p.Child("replicas"))...)
	}
	switch {
	case s.Replicas < 1:
		// minAvailable cannot be judged against an invalid replicas.
	case s.MinAvailable == nil:
		errs = append(errs, field.Required(p.Child("minAvailable"), "defaults to replicas"))
	case *s.MinAvailable < 1:
		errs = append(errs, field.Invalid(p.Child("minAvailable"), *s.MinAvailable, "must be at least 1"))
	case *s.MinAvailable > s.Replicas:
		errs = append(errs, field.Invalid(p.Child("minAvailable"), *s.MinAvailable, fmt.Sprintf("must not exceed replicas (%d)", s.Replicas)))
	}
	if s.ScaleConfig != nil {
		ap := p.Child("autoScalingConfig")
		if inScalingGroup {
			errs = append(errs, field.Forbidden(ap, "a clique of a scaling group scales with the group: set scaleConfig on the scaling group instead"))
		} else {
			errs = append(errs, validateAutoScaling(s.ScaleConfig, s.Replicas, corev1alpha1.MinAvailableOf(s), ap)...)
		}
	}
	ps := p.Child("podSpec")
	if s.PodSpec.RestartPolicy != "" && !slices.Contains(restartPolicies, s.PodSpec.RestartPolicy) {
		errs = append(errs, field.NotSupported(ps.Child("restartPolicy"), s.PodSpec.RestartPolicy, restartPolicies))
	}
	if g := s.PodSpec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(ps.Child("terminationGracePeriodSeconds"), *g, "must not be negative"))
	}
	if s.PodSpec.NodeName != "" {
		errs = append(errs, field.Forbidden(ps.Child("nodeName"), "pods of a gang are placed by the scheduler; nodeName would bypass it"))
	}
	return errs
}

// validateAutoScaling keeps an autoscaler within the gang's floor: scaling below minAvailable
// would breach the minimum and terminate the gang.
func validateAutoScaling(a *corev1alpha1.AutoScalingConfig, replicas, minAvailable int32, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	lower := minAvailable
	if a.MinReplicas == nil {
		errs = append(errs, field.Required(p.Child("minReplicas"), "defaults to replicas"))
	} else {
		lower = *a.MinReplicas
		if *a.MinReplicas < minAvailable {
			errs = append(errs, field.Invalid(p.Child("minReplicas"), *a.MinReplicas, fmt.Sprintf("must be at least minAvailable (%d)", minAvailable)))
		}
	}
	if a.MaxReplicas > common.MaxReplicas {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), a.MaxReplicas, fmt.Sprintf("must not exceed %d", common.MaxReplicas)))
	}
	if a.MaxReplicas < lower {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), a.MaxReplicas, fmt.Sprintf("must be at least minReplicas (%d)", lower)))
	} else if a.MaxReplicas < replicas {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), a.MaxReplicas, fmt.Sprintf("must be at least replicas (%d)", replicas)))
	}
	return errs
}

// validateStartsAfter checks explicit start ordering: every reference names another clique
// once, and the references form no cycle (a cycle would keep its cliques waiting forever).
func validateStartsAfter(cliques []*corev1alpha1.PodCliqueTemplateSpec, cp *field.Path) field.ErrorList {
	var errs field.ErrorList
	known := sets.New[string]()
	for _, c := range cliques {
		if c != nil {
			known.Insert(c.Name)
		}
	}
	graph := map[string][]string{}
	index := map[string]int{}
	for i, c := range cliques {
		if c == nil {
			continue
		}
		if _, dup := index[c.Name]; !dup {
			index[c.Name] = i
		}
		sp := cp.Index(i).Child("spec", "startsAfter")
		seen := sets.New[string]()
		for j, dep := range c.Spec.StartsAfter {
			switch {
			case dep == "":
				errs = append(errs, field.Required(sp.Index(j), "must name a clique"))
			case dep == c.Name:
				errs = append(errs, field.Invalid(sp.Index(j), dep, "a clique cannot start after itself"))
			case seen.Has(dep):
				errs = append(errs, field.Duplicate(sp.Index(j), dep))
			case !known.Has(dep):
				errs = append(errs, field.NotFound(sp.Index(j), dep))
			default:
				graph[c.Name] = append(graph[c.Name], dep)
			}
			seen.Insert(dep)
		}
	}
	for _, cycle := range findCycles(graph) {
		first := cycle[0]
		errs = append(errs, field.Invalid(cp.Index(index[first]).Child("spec", "startsAfter"), strings.Join(cycle, " -> ")+" -> "+first,
			"startsAfter must not form a cycle"))
	}
	return errs
}

// findCycles returns one representative cycle per strongly connected component that contains
// a cycle, each rotated to start at its smallest name, sorted for stable messages.
func findCycles(graph map[string][]string) [][]string {
	nodes := make([]string, 0, len(graph))
	for n := range graph {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	// Tarjan's algorithm.
	var (
		idx     = map[string]int{}
		low     = map[string]int{}
		onStack = map[string]bool{}
		stack   []string
		next    int
		sccs    [][]string
	)
	var strongConnect func(v string)
	strongConnect = func(v string) {
		idx[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range graph[v] {
			if _, seen := idx[w]; !seen {
				strongConnect(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], idx[w])
			}
		}
		if low[v] == idx[v] {
			var scc []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				scc = append(scc, w)
				if w == v {
					break
				}
			}
			if len(scc) > 1 {
				sccs = append(sccs, scc)
			}
		}
	}
	for _, n := range nodes {
		if _, seen := idx[n]; !seen {
			strongConnect(n)
		}
	}
	var cycles [][]string
	for _, scc := range sccs {
		cycles = append(cycles, cycleWithin(graph, sets.New(scc...)))
	}
	sort.Slice(cycles, func(i, j int) bool { return cycles[i][0] < cycles[j][0] })
	return cycles
}

// cycleWithin walks edges inside one strongly connected component from its smallest node
// until a node repeats, and returns the cycle found.
func cycleWithin(graph map[string][]string, scc sets.Set[string]) []string {
	start := sets.List(scc)[0]
	pos := map[string]int{}
	var path []string
	for v := start; ; {
		if p, ok := pos[v]; ok {
			return rotateToSmallest(path[p:])
		}
		pos[v] = len(path)
		path = append(path, v)
		var nextNode string
		for _, w := range graph[v] {
			if scc.Has(w) && (nextNode == "" || w < nextNode) {
				nextNode = w
			}
		}
		v = nextNode
	}
}

func rotateToSmallest(cycle []string) []string {
	m := 0
	for i := range cycle {
		if cycle[i] < cycle[m] {
			m = i
		}
	}
	return append(append([]string{}, cycle[m:]...), cycle[:m]...)
}

func validateScalingGroups(t *corev1alpha1.PodCliqueSetTemplateSpec) field.ErrorList {
	var errs field.ErrorList
	gp := templatePath.Child("podCliqueScalingGroups")
	groupNames := map[string]bool{}
	memberOf := map[string]string{}
	for i := range t.PodCliqueScalingGroupConfigs {
		g := &t.PodCliqueScalingGroupConfigs[i]
		p := gp.Index(i)
		errs = append(errs, validateDNSLabel(g.Name, p.Child("name"))...)
		if g.Name != "" && groupNames[g.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), g.Name))
		}
		groupNames[g.Name] = true
		if len(g.CliqueNames) == 0 {
			errs = append(errs, field.Required(p.Child("cliqueNames"), "a scaling group needs at least one clique"))
		}
		for j, n := range g.CliqueNames {
			np := p.Child("cliqueNames").Index(j)
			switch other, taken := memberOf[n]; {
			case t.Clique(n) == nil:
				errs = append(errs, field.NotFound(np, n))
			case taken && other == g.Name:
				errs = append(errs, field.Duplicate(np, n))
			case taken:
				errs = append(errs, field.Invalid(np, n, fmt.Sprintf("clique is already a member of scaling group %q; a clique belongs to at most one group", other)))
			default:
				memberOf[n] = g.Name
			}
		}
		errs = append(errs, apivalidation.ValidateAnnotations(g.Annotations, p.Child("annotations"))...)
		replicas, minAvailable := corev1alpha1.ScalingGroupReplicas(g), corev1alpha1.ScalingGroupMinAvailable(g)
		errs = append(errs, validateReplicaBound(replicas, 1, p.Child("replicas"))...)
		if minAvailable < 1 {
			errs = append(errs, field.Invalid(p.Child("minAvailable"), minAvailable, "must be at least 1"))
		} else if minAvailable > replicas {
			errs = append(errs, field.Invalid(p.Child("minAvailable"), minAvailable, fmt.Sprintf("must not exceed replicas (%d)", replicas)))
		}
		if g.ScaleConfig != nil {
			errs = append(errs, validateAutoScaling(g.ScaleConfig, replicas, minAvailable, p.Child("scaleConfig"))...)
		}
	}
	return errs
}

func validateDNSLabel(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// validateReplicaBound keeps a replica count within [lowest, common.MaxReplicas]. The upper
// bound keeps every index within the digits the name budget reserves (the CRDs enforce the
// same bound on the scale subresources, which bypass this webhook).
func validateReplicaBound(replicas, lowest int32, p *field.Path) field.ErrorList {
	switch {
	case replicas < lowest:
		return field.ErrorList{field.Invalid(p, replicas, fmt.Sprintf("must be at least %d", lowest))}
	case replicas > common.MaxReplicas:
		return field.ErrorList{field.Invalid(p, replicas, fmt.Sprintf("must not exceed %d (generated names reserve %d digits for an index)", common.MaxReplicas, common.ReservedIndexDigits))}
	}
	return nil
}

// validateCliqueMetadata checks a clique's labels and annotations as the apiserver checks
// object metadata (they are copied onto the PodClique and its pods, which the apiserver would
// otherwise refuse long after admission), and refuses the labels grove-operator manages.
//
// app.kubernetes.io/managed-by and part-of are grove-operator's too (it selects its objects by
// them): a different value used to be replaced without a word, so it is refused; the value
// grove-operator sets itself is harmless and admitted.
func validateCliqueMetadata(labels, annotations map[string]string, pcsName string, p *field.Path) field.ErrorList {
	lp := p.Child("labels")
	errs := metav1validation.ValidateLabels(labels, lp)
	own := common.DefaultLabels(pcsName)
	for _, k := range sets.List(sets.KeySet(labels)) {
		if slices.Contains(common.ReservedLabelKeys, k) {
			errs = append(errs, field.Forbidden(lp.Key(k), "this label is set by grove-operator to tie pods to their gang and must not be set in the template"))
		}
		if want, ok := own[k]; ok && (labels[k] != want || pcsName == "") {
			errs = append(errs, field.Invalid(lp.Key(k), labels[k], fmt.Sprintf("grove-operator sets this label to %q on the PodClique and its pods (it finds its objects by it); leave it out", want)))
		}
	}
	return append(errs, apivalidation.ValidateAnnotations(annotations, p.Child("annotations"))...)
}
