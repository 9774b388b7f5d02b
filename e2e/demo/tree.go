// Package demo renders what Grove made of a PodCliqueSet as a tree a person can read:
// PodCliqueSet → replica → PodGang → PodClique → pod → node / rack / block.
package demo

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
}

// Read takes a snapshot of one PodCliqueSet.
func Read(ctx context.Context, c client.Client, ns, name, rackKey, blockKey string) (*Snapshot, error) {
	s := &Snapshot{PCS: &corev1alpha1.PodCliqueSet{}, Nodes: map[string]*corev1.Node{}, RackKey: rackKey, BlockKey: blockKey}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s.PCS); err != nil {
		return nil, err
	}
	sel := client.MatchingLabels{common.LabelPartOfKey: name}
	var gangs schedv1alpha1.PodGangList
	if err := c.List(ctx, &gangs, client.InNamespace(ns), sel); err != nil {
		return nil, err
	}
	var cliques corev1alpha1.PodCliqueList
	if err := c.List(ctx, &cliques, client.InNamespace(ns), sel); err != nil {
		return nil, err
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), sel); err != nil {
		return nil, err
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, err
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
	fmt.Fprintf(w, "PodCliqueSet %s/%s  replicas=%d available=%d\n", pcs.Namespace, pcs.Name, pcs.Spec.Replicas, pcs.Status.AvailableReplicas)
	for _, cond := range pcs.Status.Conditions {
		if cond.Status == "True" {
			fmt.Fprintf(w, "│ condition %s=%s (%s) %s\n", cond.Type, cond.Status, cond.Reason, cond.Message)
		}
	}
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
		fmt.Fprintf(w, "%s replica %d\n", branch(lastReplica), r)
		gangs := replicas[r]
		sort.Slice(gangs, func(i, j int) bool { return gangs[i].Name < gangs[j].Name })
		for gi, g := range gangs {
			lastGang := gi == len(gangs)-1
			prefix := indent(lastReplica)
			fmt.Fprintf(w, "%s%s PodGang %s  phase=%s scheduled=%s%s\n", prefix, branch(lastGang), g.Name, orDash(string(g.Status.Phase)),
				condStatus(g.Status.Conditions, schedv1alpha1.PodGangConditionScheduled), reason(g.Status.Conditions, schedv1alpha1.PodGangConditionScheduled))
			s.renderGroups(w, prefix+indent(lastGang), g, podsByGang[g.Name])
		}
	}
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
	n := s.Nodes[p.Spec.NodeName]
	rack, block := "-", "-"
	if n != nil {
		rack, block = orDash(n.Labels[s.RackKey]), orDash(n.Labels[s.BlockKey])
	}
	return fmt.Sprintf("pod %-40s %-8s node=%s rack=%s block=%s", p.Name, state, p.Spec.NodeName, rack, block)
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

func condStatus(conds []metav1Condition, t string) string {
	if c := apimeta.FindStatusCondition(conds, t); c != nil {
		return string(c.Status)
	}
	return "-"
}

func reason(conds []metav1Condition, t string) string {
	c := apimeta.FindStatusCondition(conds, t)
	if c == nil || c.Status == "True" || c.Message == "" {
		return ""
	}
	return fmt.Sprintf("\n      reason: %s", strings.TrimSpace(c.Message))
}
