// Package kubectlgrove is the logic of the `kubectl grove` plugin: `tree` renders what Grove
// made of a PodCliqueSet (PodCliqueSet → replica → PodGang → PodClique → pod → node and its
// topology domains), `why` explains in plain words what holds a PodCliqueSet, PodGang or pod
// back, and `topology` shows a ClusterTopology's domains with their capacity and gangs. The
// command (cmd/kubectl-grove) only parses flags; everything here reads through Clients.
package kubectlgrove

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// Snapshot is everything the tree shows, read at one moment.
type Snapshot struct {
	PCS      *corev1alpha1.PodCliqueSet
	Gangs    []schedv1alpha1.PodGang
	Cliques  []corev1alpha1.PodClique
	Pods     []corev1.Pod
	Nodes    map[string]*corev1.Node
	RackKey  string
	BlockKey string
	// Topology is the ClusterTopology the PodCliqueSet's constraints name (or the cluster's
	// only one); nil without one.
	Topology *corev1alpha1.ClusterTopology
	// topologyUnconstrained: Topology only names domains, the PodCliqueSet requires none.
	topologyUnconstrained bool
}

// Read takes a snapshot of one PodCliqueSet.
func Read(ctx context.Context, c Clients, ns, name, rackKey, blockKey string) (*Snapshot, error) {
	s := &Snapshot{Nodes: map[string]*corev1.Node{}, RackKey: rackKey, BlockKey: blockKey}
	grove := c.Grove.GroveV1alpha1()
	var err error
	if s.PCS, err = grove.PodCliqueSets(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		return nil, err
	}
	sel := metav1.ListOptions{LabelSelector: selector(common.LabelPartOfKey, name)}
	gangs, err := c.Grove.SchedulerV1alpha1().PodGangs(ns).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	cliques, err := grove.PodCliques(ns).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	if tc := s.PCS.Spec.Template.TopologyConstraint; tc != nil && tc.TopologyName != "" {
		if s.Topology, err = grove.ClusterTopologies().Get(ctx, tc.TopologyName, metav1.GetOptions{}); err != nil {
			return nil, err
		}
	}
	if s.Topology == nil {
		// Without a constraint, the cluster's only ClusterTopology still names the domains.
		if cts, err := grove.ClusterTopologies().List(ctx, metav1.ListOptions{}); err == nil && len(cts.Items) == 1 {
			s.Topology = &cts.Items[0]
			s.topologyUnconstrained = true
		}
	}
	s.Gangs, s.Cliques, s.Pods = gangs.Items, cliques.Items, pods.Items
	for i := range nodes.Items {
		s.Nodes[nodes.Items[i].Name] = &nodes.Items[i]
	}
	return s, nil
}

// Render writes the tree.
func (s *Snapshot) Render(w io.Writer) {
	pcs := s.PCS
	fmt.Fprintf(w, "PodCliqueSet %s/%s  replicas=%d available=%d gangs=%d/%d scheduled ready=%s\n", pcs.Namespace, pcs.Name,
		pcs.Spec.Replicas, pcs.Status.AvailableReplicas, pcs.Status.ScheduledPodGangs, pcs.Status.TotalPodGangs,
		condStatus(pcs.Status.Conditions, common.ConditionReady))
	for _, cond := range pcs.Status.Conditions {
		// A True condition other than Ready is a problem worth a line (they are named that way);
		// a False Ready carries the first obstacle.
		notReady := cond.Type == common.ConditionReady && cond.Status == metav1.ConditionFalse
		if (cond.Status == metav1.ConditionTrue && cond.Type != common.ConditionReady) || notReady {
			fmt.Fprintf(w, "│ condition %s=%s (%s) %s\n", cond.Type, cond.Status, cond.Reason, cond.Message)
		}
	}
	s.renderSpread(w)
	podsByGang := map[string][]corev1.Pod{}
	for _, p := range s.Pods {
		podsByGang[p.Labels[common.LabelPodGang]] = append(podsByGang[p.Labels[common.LabelPodGang]], p)
	}
	replicas := map[int][]schedv1alpha1.PodGang{}
	for _, g := range s.Gangs {
		r, _ := strconv.Atoi(g.Labels[common.LabelPodCliqueSetReplicaIndex])
		replicas[r] = append(replicas[r], g)
	}
	var idx []int
	for r := range replicas {
		idx = append(idx, r)
	}
	sort.Ints(idx)
	for ri, r := range idx {
		lastReplica := ri == len(idx)-1
		fmt.Fprintf(w, "%s replica %d%s\n", branch(lastReplica), r, s.replicaVersions(r))
		gangs := replicas[r]
		sort.Slice(gangs, func(i, j int) bool { return gangs[i].Name < gangs[j].Name })
		for gi, g := range gangs {
			lastGang := gi == len(gangs)-1
			prefix := indent(lastReplica)
			score := ""
			if g.Status.PlacementScore != nil {
				score = fmt.Sprintf("  score=%.2f", *g.Status.PlacementScore)
			}
			fmt.Fprintf(w, "%s%s PodGang %s  phase=%s scheduled=%s%s%s%s\n", prefix, branch(lastGang), g.Name, orDash(string(g.Status.Phase)),
				condStatus(g.Status.Conditions, schedv1alpha1.PodGangConditionScheduled), s.Packing(&g).summary(), score,
				reason(g.Status.Conditions, schedv1alpha1.PodGangConditionScheduled))
			s.renderGroups(w, prefix+indent(lastGang), g, podsByGang[g.Name])
		}
	}
}

// renderSpread writes a line per replica spread of the PodCliqueSet: which replica runs in
// which domain, the unused domains and the skew, and a line per sliced PodClique: which slice
// runs in which domain (as kubectl grove topology does).
func (s *Snapshot) renderSpread(w io.Writer) {
	if s.Topology == nil {
		return
	}
	nodes := make([]corev1.Node, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		nodes = append(nodes, *n)
	}
	var buf bytes.Buffer
	renderSpread(&buf, s.Topology, nodes, s.Pods, s.Gangs)
	renderSlices(&buf, s.Topology, nodes, s.Pods, s.Gangs)
	renderRoles(&buf, s.Topology, nodes, s.Pods, s.Gangs)
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line != "" {
			fmt.Fprintf(w, "│ %s\n", line)
		}
	}
}

// replicaVersions says which template versions (PodCliqueSet generation hashes) the replica's
// pods run: one version in steady state, the current one first with the count of pods on each
// during a rollout, and whether the replica is the one a RollingRecreate update is replacing.
func (s *Snapshot) replicaVersions(replica int) string {
	counts := map[string]int{}
	for _, p := range s.Pods {
		if p.DeletionTimestamp != nil || p.Labels[common.LabelPodCliqueSetReplicaIndex] != strconv.Itoa(replica) {
			continue
		}
		counts[p.Labels[common.LabelPodCliqueSetGenerationHash]]++
	}
	if len(counts) == 0 {
		return ""
	}
	current := ""
	if h := s.PCS.Status.CurrentGenerationHash; h != nil {
		current = *h
	}
	versions := make([]string, 0, len(counts))
	for v := range counts {
		versions = append(versions, v)
	}
	sort.Slice(versions, func(i, j int) bool {
		if (versions[i] == current) != (versions[j] == current) {
			return versions[i] == current
		}
		return versions[i] < versions[j]
	})
	updating := ""
	if up := s.PCS.Status.UpdateProgress; up != nil && up.UpdateEndedAt == nil {
		for _, c := range up.CurrentlyUpdating {
			if int(c.ReplicaIndex) == replica {
				updating = " (updating)"
			}
		}
	}
	if len(versions) == 1 {
		return fmt.Sprintf("  version=%s%s", orDash(versions[0]), updating)
	}
	parts := make([]string, len(versions))
	for i, v := range versions {
		parts[i] = fmt.Sprintf("%s:%d", orDash(v), counts[v])
	}
	return fmt.Sprintf("  versions=%s%s", strings.Join(parts, ","), updating)
}

func (s *Snapshot) renderGroups(w io.Writer, prefix string, g schedv1alpha1.PodGang, pods []corev1.Pod) {
	for i, pg := range g.Spec.PodGroups {
		last := i == len(g.Spec.PodGroups)-1
		var members []corev1.Pod
		for _, p := range pods {
			if p.Labels[common.LabelPodClique] == pg.Name {
				members = append(members, p)
			}
		}
		sort.Slice(members, func(a, b int) bool {
			return members[a].Labels[common.LabelPodCliquePodIndex] < members[b].Labels[common.LabelPodCliquePodIndex]
		})
		fmt.Fprintf(w, "%s%s PodClique %s  min=%d pods=%d\n", prefix, branch(last), pg.Name, pg.MinReplicas, len(members))
		for pi, p := range members {
			fmt.Fprintf(w, "%s%s %s\n", prefix+indent(last), branch(pi == len(members)-1), s.podLine(p))
		}
	}
}

func (s *Snapshot) podLine(p corev1.Pod) string {
	state := string(p.Status.Phase)
	if len(p.Spec.SchedulingGates) > 0 {
		state = "Gated"
	}
	if p.Spec.NodeName == "" {
		return fmt.Sprintf("pod %-40s %-8s (not placed)", p.Name, state)
	}
	slice := ""
	if v, ok := p.Labels[common.LabelSliceIndex]; ok {
		slice = " slice=" + v
	}
	return fmt.Sprintf("pod %-40s %-8s node=%s%s%s", p.Name, state, p.Spec.NodeName, s.domainsOf(p.Spec.NodeName), slice)
}

// domainsOf lists a node's topology domains, narrowest first, from the ClusterTopology when
// there is one (the host level is the node itself), else from RackKey and BlockKey.
func (s *Snapshot) domainsOf(node string) string {
	n := s.Nodes[node]
	var labels map[string]string
	if n != nil {
		labels = n.Labels
	}
	var b strings.Builder
	if s.Topology == nil {
		fmt.Fprintf(&b, " rack=%s block=%s", orDash(labels[s.RackKey]), orDash(labels[s.BlockKey]))
		return b.String()
	}
	levels := s.Topology.Spec.Levels
	for i := len(levels) - 1; i >= 0; i-- {
		if levels[i].Domain == corev1alpha1.TopologyDomainHost {
			continue
		}
		fmt.Fprintf(&b, " %s=%s", levels[i].Domain, orDash(labels[levels[i].Key]))
	}
	return b.String()
}

func branch(last bool) string {
	if last {
		return "└─"
	}
	return "├─"
}

func indent(last bool) string {
	if last {
		return "   "
	}
	return "│  "
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func condStatus(conds []metav1.Condition, t string) string {
	if c := apimeta.FindStatusCondition(conds, t); c != nil {
		return string(c.Status)
	}
	return "-"
}

func reason(conds []metav1.Condition, t string) string {
	c := apimeta.FindStatusCondition(conds, t)
	if c == nil || c.Status == "True" || c.Message == "" {
		return ""
	}
	return fmt.Sprintf("\n      reason: %s", strings.TrimSpace(c.Message))
}

// Packing is where the bound pods of a PodGang sit in the domain its PodCliqueSet requires them
// to share.
type Packing struct {
	// Domain is the required domain (a scaling group's own for a scaled PodGang, else the
	// PodCliqueSet's); empty when nothing is required or the snapshot has no topology.
	Domain corev1alpha1.TopologyDomain
	// Values are the distinct values of the domain's node label over the bound pods, sorted.
	Values []string
	// Pods and Bound count the gang's pods and those bound to a node.
	Pods, Bound int
}

// Packed reports whether every pod of the gang is bound and all of them share one domain.
func (p Packing) Packed() bool { return p.Pods > 0 && p.Bound == p.Pods && len(p.Values) == 1 }

func (p Packing) summary() string {
	switch {
	case p.Domain == "" || p.Bound == 0:
		return ""
	case len(p.Values) == 1:
		return fmt.Sprintf("  in %s %s", p.Domain, p.Values[0])
	default:
		return fmt.Sprintf("  SPREAD over %ss %s (one %s required)", p.Domain, strings.Join(p.Values, ", "), p.Domain)
	}
}

// Packing computes a PodGang's packing in the domain its PodCliqueSet requires.
func (s *Snapshot) Packing(g *schedv1alpha1.PodGang) Packing {
	return s.PackingIn(g, s.requiredDomain(g))
}

// PackingIn computes a PodGang's packing in a domain of the snapshot's topology.
func (s *Snapshot) PackingIn(g *schedv1alpha1.PodGang, domain corev1alpha1.TopologyDomain) Packing {
	p := Packing{Domain: domain}
	key := s.domainKey(p.Domain)
	values := map[string]bool{}
	for _, pod := range s.Pods {
		if pod.Labels[common.LabelPodGang] != g.Name {
			continue
		}
		p.Pods++
		if pod.Spec.NodeName == "" {
			continue
		}
		p.Bound++
		if n := s.Nodes[pod.Spec.NodeName]; n != nil && key != "" {
			values[n.Labels[key]] = true
		}
	}
	for v := range values {
		p.Values = append(p.Values, v)
	}
	sort.Strings(p.Values)
	if key == "" {
		p.Domain = ""
	}
	return p
}

func (s *Snapshot) requiredDomain(g *schedv1alpha1.PodGang) corev1alpha1.TopologyDomain {
	t := &s.PCS.Spec.Template
	if pcsg := g.Labels[common.LabelPodCliqueScalingGroup]; pcsg != "" {
		r, _ := strconv.Atoi(g.Labels[common.LabelPodCliqueSetReplicaIndex])
		for _, cfg := range t.PodCliqueScalingGroupConfigs {
			// As the operator translates it: the group's own constraint, else the PodCliqueSet's.
			if common.PodCliqueScalingGroupName(s.PCS.Name, r, cfg.Name) == pcsg && cfg.TopologyConstraint != nil {
				return cfg.TopologyConstraint.RequiredDomain()
			}
		}
	}
	return t.TopologyConstraint.RequiredDomain()
}

func (s *Snapshot) domainKey(d corev1alpha1.TopologyDomain) string {
	if s.Topology == nil || s.topologyUnconstrained || d == "" {
		return ""
	}
	for _, l := range s.Topology.Spec.Levels {
		if l.Domain == d {
			return l.Key
		}
	}
	return ""
}
