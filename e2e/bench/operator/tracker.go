package main

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// Milestones, in the order a workload reaches them.
const (
	MCreated     = "created"
	MInitialized = "gangs initialized"
	// MUngated ("released") is when every pod may be scheduled: its gate lifted, or, for a pod
	// grove-operator created without a gate (grove-scheduler holds such a pod until its PodGang
	// lists it), listed in its PodGang.
	MUngated   = "released"
	MBound     = "bound"
	MReady     = "ready"
	MAvailable = "PCS available"
	MGone      = "surplus pods gone"
)

// grow lists the milestones of a workload that makes pods; shrink those of one that removes them.
var (
	growMilestones   = []string{MCreated, MInitialized, MUngated, MBound, MReady, MAvailable}
	plainMilestones  = []string{MCreated, MBound, MReady}
	shrinkMilestones = []string{MGone, MAvailable}
)

// expectation is what a workload must reach in its namespace: want fresh pods (pods not in
// old), or at most want pods in all when shrinking.
type expectation struct {
	ns     string
	want   int
	old    map[types.UID]bool
	shrink bool
	// grove: PodGangs and PodCliqueSets are tracked too.
	grove bool
	// generation, when set, is the PodCliqueSet generation of the change once it is made
	// (0 before): PCS available needs the cache to have seen it.
	generation *atomic.Int64
	// stages, when set, follows each PodGang through a rollout (grove only).
	stages *stageTracker
}

// observe reads the cache (no API requests) and returns the milestones reached now.
func observe(ctx context.Context, c client.Reader, e expectation, now time.Duration) (map[string]bool, string, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(e.ns), client.UnsafeDisableDeepCopy); err != nil {
		return nil, "", err
	}
	reached := map[string]bool{}
	var fresh, ungated, bound, ready int
	// waiting are the fresh pods without a gate that grove-scheduler holds until their PodGang
	// lists them: released once listed (counted with the gangs below).
	waiting := map[string]bool{}
	freshNames := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if e.old[p.UID] || p.DeletionTimestamp != nil {
			continue
		}
		fresh++
		freshNames[p.Name] = true
		switch {
		case slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
			return g.Name == apicommon.SchedulingGatePodGangPendingCreation
		}):
		case e.grove && p.Spec.NodeName == "" && p.Labels[apicommon.LabelPodGang] != "":
			waiting[p.Name] = true
		default:
			ungated++
		}
		if p.Spec.NodeName != "" {
			bound++
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	if e.shrink {
		reached[MGone] = len(pods.Items) <= e.want
	} else {
		reached[MCreated] = fresh >= e.want
		reached[MBound] = fresh >= e.want && bound >= e.want
		reached[MReady] = fresh >= e.want && ready >= e.want
	}
	if !e.grove {
		reached[MUngated] = !e.shrink && fresh >= e.want && ungated >= e.want
		return reached, fmt.Sprintf("pods=%d fresh=%d ungated=%d bound=%d ready=%d", len(pods.Items), fresh, ungated, bound, ready), nil
	}
	gangs := &schedv1alpha1.PodGangList{}
	if err := c.List(ctx, gangs, client.InNamespace(e.ns), client.UnsafeDisableDeepCopy); err != nil {
		return nil, "", err
	}
	initialized, listed := 0, 0
	listedNames := map[string]bool{}
	for i := range gangs.Items {
		g := &gangs.Items[i]
		if g.DeletionTimestamp == nil && meta.IsStatusConditionTrue(g.Status.Conditions, schedv1alpha1.PodGangConditionInitialized) {
			initialized++
		}
		for _, grp := range g.Spec.PodGroups {
			for _, ref := range grp.PodReferences {
				if freshNames[ref.Name] {
					listed++
					listedNames[ref.Name] = true
				}
				if waiting[ref.Name] {
					ungated++
				}
			}
		}
	}
	if e.stages != nil {
		e.stages.observe(now, e.old, pods.Items, listedNames)
	}
	reached[MUngated] = !e.shrink && fresh >= e.want && ungated >= e.want
	progress := fmt.Sprintf("pods=%d fresh=%d released=%d bound=%d ready=%d", len(pods.Items), fresh, ungated, bound, ready)
	reached[MInitialized] = !e.shrink && reached[MCreated] && initialized == len(gangs.Items) && listed >= e.want
	sets := &corev1alpha1.PodCliqueSetList{}
	if err := c.List(ctx, sets, client.InNamespace(e.ns), client.UnsafeDisableDeepCopy); err != nil {
		return nil, "", err
	}
	available := len(sets.Items) > 0
	minGen := int64(0)
	if e.generation != nil {
		if minGen = e.generation.Load(); minGen == 0 {
			available = false
		}
	}
	for i := range sets.Items {
		s := &sets.Items[i]
		st := s.Status
		if s.Generation < minGen || st.ObservedGeneration == nil || *st.ObservedGeneration != s.Generation ||
			st.AvailableReplicas != s.Spec.Replicas || st.UpdatedReplicas != s.Spec.Replicas || st.Replicas != s.Spec.Replicas {
			available = false
		}
	}
	reached[MAvailable] = available
	progress += fmt.Sprintf(" gangs=%d initialized=%d listed=%d", len(gangs.Items), initialized, listed)
	return reached, progress, nil
}

// track polls the cache every 50ms from start until every milestone is reached or timeout,
// and returns each milestone's time since start (missing when not reached). Once a second it
// adds the progress counts to timeline, which shows where a workload waited.
func track(ctx context.Context, c client.Reader, e expectation, milestones []string, start time.Time, timeout time.Duration, timeline *[]string) (map[string]time.Duration, error) {
	got := map[string]time.Duration{}
	nextSample := time.Duration(0)
	deadline := start.Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		now := time.Since(start)
		reached, progress, err := observe(ctx, c, e, now)
		if err != nil {
			return got, err
		}
		if timeline != nil && now >= nextSample {
			*timeline = append(*timeline, fmt.Sprintf("%5.1fs %s", now.Seconds(), progress))
			nextSample += time.Second
		}
		for _, m := range milestones {
			if _, done := got[m]; !done && reached[m] {
				got[m] = now
			}
		}
		last = progress
		if len(got) == len(milestones) {
			return got, nil
		}
		if time.Now().After(deadline) {
			return got, fmt.Errorf("timed out after %s: %s", timeout, last)
		}
		select {
		case <-ctx.Done():
			return got, ctx.Err()
		case <-tick.C:
		}
	}
}
