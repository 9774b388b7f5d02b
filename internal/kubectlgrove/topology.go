package kubectlgrove

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// domain is one value of one topology level, with what its nodes hold.
type domain struct {
	level    corev1alpha1.TopologyDomain
	value    string
	nodes    int
	alloc    corev1.ResourceList
	used     corev1.ResourceList
	gangs    map[string]int // namespace/name → bound pods, for gangs wholly inside this domain
	children map[string]*domain
}

func newDomain(level corev1alpha1.TopologyDomain, value string) *domain {
	return &domain{level: level, value: value, alloc: corev1.ResourceList{}, used: corev1.ResourceList{},
		gangs: map[string]int{}, children: map[string]*domain{}}
}

// Topology writes the domains of one ClusterTopology (every one when name is empty), broadest
// first, each with its nodes' free and allocatable capacity and the PodGangs whose bound pods
// all sit inside it (listed at the narrowest such domain), then every replica spread over one
// of its levels: which replica is in which domain, and the skew.
func Topology(ctx context.Context, c Clients, name string, w io.Writer) error {
	var cts []corev1alpha1.ClusterTopology
	topologies := c.Grove.GroveV1alpha1().ClusterTopologies()
	if name != "" {
		ct, err := topologies.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cts = append(cts, *ct)
	} else {
		list, err := topologies.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return fmt.Errorf("no ClusterTopology exists")
		}
		cts = list.Items
	}
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	pods, err := c.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	gangs, err := c.Grove.SchedulerV1alpha1().PodGangs(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range cts {
		if i > 0 {
			fmt.Fprintln(w)
		}
		renderTopology(w, &cts[i], nodes.Items, pods.Items)
		renderSpread(w, &cts[i], nodes.Items, pods.Items, gangs.Items)
		renderSlices(w, &cts[i], nodes.Items, pods.Items, gangs.Items)
		renderRoles(w, &cts[i], nodes.Items, pods.Items, gangs.Items)
	}
	return nil
}

func renderTopology(w io.Writer, ct *corev1alpha1.ClusterTopology, nodes []corev1.Node, pods []corev1.Pod) {
	var levels []corev1alpha1.TopologyLevel
	var names []string
	for _, l := range ct.Spec.Levels {
		names = append(names, fmt.Sprintf("%s (%s)", l.Domain, l.Key))
		if l.Domain != corev1alpha1.TopologyDomainHost {
			levels = append(levels, l)
		}
	}
	fmt.Fprintf(w, "ClusterTopology %s: %s\n", ct.Name, strings.Join(names, " > "))
	root := newDomain("cluster", ct.Name)
	shown := map[corev1.ResourceName]bool{corev1.ResourceCPU: true}
	pathOf := map[string][]*domain{}
	for i := range nodes {
		n := &nodes[i]
		path := []*domain{root}
		d := root
		for _, l := range levels {
			v := n.Labels[l.Key]
			if v == "" {
				v = "(unlabelled)"
			}
			if d.children[v] == nil {
				d.children[v] = newDomain(l.Domain, v)
			}
			d = d.children[v]
			path = append(path, d)
		}
		pathOf[n.Name] = path
		for r, q := range n.Status.Allocatable {
			if strings.Contains(string(r), "/") {
				shown[r] = true
			}
			for _, d := range path {
				add(d.alloc, r, q)
			}
		}
		for _, d := range path {
			d.nodes++
		}
	}
	gangPaths := map[string][][]*domain{}
	for i := range pods {
		p := &pods[i]
		path, ok := pathOf[p.Spec.NodeName]
		if !ok || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for r, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			for _, d := range path {
				add(d.used, r, q)
			}
		}
		if g := p.Labels[common.LabelPodGang]; g != "" {
			key := p.Namespace + "/" + g
			gangPaths[key] = append(gangPaths[key], path)
		}
	}
	for key, paths := range gangPaths {
		// The narrowest domain every bound pod of the gang shares.
		depth := 0
		for depth+1 < len(paths[0]) {
			d := paths[0][depth+1]
			same := true
			for _, p := range paths[1:] {
				same = same && p[depth+1] == d
			}
			if !same {
				break
			}
			depth++
		}
		paths[0][depth].gangs[key] = len(paths)
	}
	var resources []corev1.ResourceName
	for r := range shown {
		resources = append(resources, r)
	}
	sort.Slice(resources, func(i, j int) bool { return resources[i] < resources[j] })
	fmt.Fprintf(w, "%s%s\n", root.summary(resources), root.gangList("spread over several "+string(firstLevel(levels))+"s"))
	root.render(w, "", resources)
}

func firstLevel(levels []corev1alpha1.TopologyLevel) corev1alpha1.TopologyDomain {
	if len(levels) == 0 {
		return corev1alpha1.TopologyDomainHost
	}
	return levels[0].Domain
}

func add(list corev1.ResourceList, r corev1.ResourceName, q resource.Quantity) {
	sum := list[r]
	sum.Add(q)
	list[r] = sum
}

func (d *domain) summary(resources []corev1.ResourceName) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s  nodes=%d", d.level, d.value, d.nodes)
	for _, r := range resources {
		alloc, used := d.alloc[r], d.used[r]
		free := alloc.DeepCopy()
		free.Sub(used)
		fmt.Fprintf(&b, "  %s free %s of %s", r, free.String(), alloc.String())
	}
	return b.String()
}

func (d *domain) gangList(label string) string {
	if len(d.gangs) == 0 {
		return ""
	}
	keys := make([]string, 0, len(d.gangs))
	for k := range d.gangs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s (%d pods)", k, d.gangs[k]))
	}
	return fmt.Sprintf("\n    gangs %s: %s", label, strings.Join(parts, ", "))
}

func (d *domain) render(w io.Writer, prefix string, resources []corev1.ResourceName) {
	values := make([]string, 0, len(d.children))
	for v := range d.children {
		values = append(values, v)
	}
	sort.Strings(values)
	for i, v := range values {
		child, last := d.children[v], i == len(values)-1
		gangs := strings.ReplaceAll(child.gangList("inside"), "\n    ", "\n"+prefix+indent(last)+"  ")
		fmt.Fprintf(w, "%s%s %s%s\n", prefix, branch(last), child.summary(resources), gangs)
		child.render(w, prefix+indent(last), resources)
	}
}
