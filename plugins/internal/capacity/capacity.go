// Package capacity counts how many pods of given shapes fit into the free capacity of nodes.
// It is the arithmetic behind grove-scheduler's whole-gang pre-check and its topology domain
// choice: both ask "can these N pods still land here?" before a single pod is assumed.
package capacity

import (
	"fmt"
	"math"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
)

// Resources is an amount of the resources the scheduler accounts for on a node. Pods counts pod
// slots (a pod's shape has Pods=1).
type Resources struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	Pods             int64
	// Scalar holds extended resources (GPUs, hugepages, ...); nil when there are none.
	Scalar map[v1.ResourceName]int64
}

// Clone returns a copy that shares nothing with r.
func (r Resources) Clone() Resources {
	if r.Scalar != nil {
		s := make(map[v1.ResourceName]int64, len(r.Scalar))
		for k, v := range r.Scalar {
			s[k] = v
		}
		r.Scalar = s
	}
	return r
}

// FitCount is how many pods of shape fit into r.
func (r Resources) FitCount(shape Resources) int64 {
	n := int64(math.MaxInt64)
	limit := func(free, need int64) {
		if need <= 0 {
			return
		}
		if q := free / need; q < n {
			n = q
		}
	}
	limit(r.MilliCPU, shape.MilliCPU)
	limit(r.Memory, shape.Memory)
	limit(r.EphemeralStorage, shape.EphemeralStorage)
	limit(r.Pods, shape.Pods)
	for name, need := range shape.Scalar {
		limit(r.Scalar[name], need)
	}
	if n < 0 || shape.isZero() {
		// Every real pod takes a pod slot; an empty shape is a caller error and fits nowhere.
		return 0
	}
	return n
}

// Take removes n pods of shape from r.
func (r *Resources) Take(shape Resources, n int64) {
	if n == 0 {
		return
	}
	r.MilliCPU -= n * shape.MilliCPU
	r.Memory -= n * shape.Memory
	r.EphemeralStorage -= n * shape.EphemeralStorage
	r.Pods -= n * shape.Pods
	for name, need := range shape.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[name] -= n * need
	}
}

func (r Resources) isZero() bool {
	if r.MilliCPU != 0 || r.Memory != 0 || r.EphemeralStorage != 0 || r.Pods != 0 {
		return false
	}
	for _, v := range r.Scalar {
		if v != 0 {
			return false
		}
	}
	return true
}

// size orders shapes for greedy placement: the biggest pods are placed first.
func (r Resources) size() (int64, int64, int64) {
	var scalar int64
	for _, v := range r.Scalar {
		scalar += v
	}
	return scalar, r.MilliCPU, r.Memory
}

// String renders the shape of one pod, e.g. "4 CPU, 16Gi memory, 1 nvidia.com/gpu".
func (r Resources) String() string {
	var parts []string
	if r.MilliCPU > 0 {
		parts = append(parts, resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI).String()+" CPU")
	}
	if r.Memory > 0 {
		parts = append(parts, resource.NewQuantity(r.Memory, resource.BinarySI).String()+" memory")
	}
	if r.EphemeralStorage > 0 {
		parts = append(parts, resource.NewQuantity(r.EphemeralStorage, resource.BinarySI).String()+" ephemeral storage")
	}
	names := make([]string, 0, len(r.Scalar))
	for name, v := range r.Scalar {
		if v > 0 {
			names = append(names, string(name))
		}
	}
	sort.Strings(names)
	for _, name := range names {
		q := resource.NewQuantity(r.Scalar[v1.ResourceName(name)], resource.DecimalSI)
		parts = append(parts, q.String()+" "+name)
	}
	if len(parts) == 0 {
		return "no resources"
	}
	return strings.Join(parts, ", ")
}

// PodShape is what one pod takes from a node: its effective requests (init containers and
// overhead included) plus one pod slot.
func PodShape(pod *v1.Pod) Resources {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	shape := Resources{Pods: 1}
	for name, q := range reqs {
		switch name {
		case v1.ResourceCPU:
			shape.MilliCPU = q.MilliValue()
		case v1.ResourceMemory:
			shape.Memory = q.Value()
		case v1.ResourceEphemeralStorage:
			shape.EphemeralStorage = q.Value()
		case v1.ResourcePods:
		default:
			if q.IsZero() {
				continue
			}
			if shape.Scalar == nil {
				shape.Scalar = map[v1.ResourceName]int64{}
			}
			shape.Scalar[name] = q.Value()
		}
	}
	return shape
}

// NodeFree is what is left on a node: allocatable minus the requests of every pod the scheduler
// counts there, including pods assumed for binding or waiting at a Permit barrier.
func NodeFree(ni fwk.NodeInfo) Resources {
	alloc, used := ni.GetAllocatable(), ni.GetRequested()
	free := Resources{
		MilliCPU:         alloc.GetMilliCPU() - used.GetMilliCPU(),
		Memory:           alloc.GetMemory() - used.GetMemory(),
		EphemeralStorage: alloc.GetEphemeralStorage() - used.GetEphemeralStorage(),
		Pods:             int64(alloc.GetAllowedPodNumber() - len(ni.GetPods())),
	}
	if scalars := alloc.GetScalarResources(); len(scalars) > 0 {
		usedScalars := used.GetScalarResources()
		free.Scalar = make(map[v1.ResourceName]int64, len(scalars))
		for name, v := range scalars {
			free.Scalar[name] = v - usedScalars[name]
		}
	}
	return free
}

// NodeAllocatable is what the node holds when empty: what NodeFree would be without any pod.
func NodeAllocatable(ni fwk.NodeInfo) Resources {
	alloc := ni.GetAllocatable()
	r := Resources{MilliCPU: alloc.GetMilliCPU(), Memory: alloc.GetMemory(), EphemeralStorage: alloc.GetEphemeralStorage(),
		Pods: int64(alloc.GetAllowedPodNumber())}
	if scalars := alloc.GetScalarResources(); len(scalars) > 0 {
		r.Scalar = make(map[v1.ResourceName]int64, len(scalars))
		for name, v := range scalars {
			r.Scalar[name] = v
		}
	}
	return r
}

// Demand is Count pods of one Shape, typically the still unplaced members of one PodGroup.
type Demand struct {
	Group string
	Shape Resources
	Count int64
	// Class is the demand's eligibility class: the PodGroups of a gang whose pods may run on
	// the same nodes share one. A node is offered to the classes its Mask admits.
	Class int
}

// MaxClasses is how many eligibility classes a Mask tells apart; classes beyond the last one
// share it.
const MaxClasses = 64

// Mask is a set of eligibility classes: the demands that may use a node.
type Mask uint64

// AnyClass admits every demand.
const AnyClass = ^Mask(0)

// ClassMask is the mask of one class.
func ClassMask(class int) Mask { return 1 << uint(min(max(class, 0), MaxClasses-1)) }

// Admits reports whether demands of class may use a node with this mask.
func (m Mask) Admits(class int) bool { return m&ClassMask(class) != 0 }

// Demands is what a gang (or a part of it) still needs placed.
type Demands []Demand

// Total is the number of pods demanded.
func (d Demands) Total() int64 {
	var n int64
	for _, x := range d {
		n += x.Count
	}
	return n
}

// Largest is the demand of the biggest shape (a zero Demand when nothing is demanded).
func (d Demands) Largest() Demand {
	var best Demand
	found := false
	for _, x := range d {
		if x.Count == 0 {
			continue
		}
		if !found || bigger(x.Shape, best.Shape) {
			best, found = x, true
		}
	}
	return best
}

// String renders the demand in gang terms, e.g. "8 pods of 4 CPU" or
// "6 pods (4 of 4 CPU, 2 of 1 CPU)".
func (d Demands) String() string {
	var nonEmpty Demands
	for _, x := range d {
		if x.Count > 0 {
			nonEmpty = append(nonEmpty, x)
		}
	}
	switch {
	case len(nonEmpty) == 0:
		return "no pods"
	case len(nonEmpty) == 1 || allSameShape(nonEmpty):
		return fmt.Sprintf("%s of %s", pods(nonEmpty.Total()), nonEmpty[0].Shape)
	}
	parts := make([]string, 0, len(nonEmpty))
	for _, x := range nonEmpty {
		parts = append(parts, fmt.Sprintf("%d of %s", x.Count, x.Shape))
	}
	return fmt.Sprintf("%s (%s)", pods(nonEmpty.Total()), strings.Join(parts, "; "))
}

func pods(n int64) string {
	if n == 1 {
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}

func allSameShape(d Demands) bool {
	for _, x := range d[1:] {
		if x.Shape.String() != d[0].Shape.String() {
			return false
		}
	}
	return true
}

func bigger(a, b Resources) bool {
	as, ac, am := a.size()
	bs, bc, bm := b.size()
	if as != bs {
		return as > bs
	}
	if ac != bc {
		return ac > bc
	}
	return am > bm
}

// Fitter places demands node by node, largest shapes first on each node (first-fit
// decreasing), so that a caller can stop looking at nodes as soon as everything fits. It is a
// fast, close lower bound of what the scheduler can place; callers treat "not Done" as "does
// not fit".
type Fitter struct {
	demands   Demands
	order     []int
	placed    []int64
	remaining int64
}

// NewFitter starts placing demands.
func NewFitter(demands Demands) *Fitter {
	f := &Fitter{demands: demands, order: make([]int, len(demands)), placed: make([]int64, len(demands)), remaining: demands.Total()}
	for i := range demands {
		f.order[i] = i
	}
	sort.SliceStable(f.order, func(a, b int) bool { return bigger(demands[f.order[a]].Shape, demands[f.order[b]].Shape) })
	return f
}

// Offer places on a node what fits there, for the demands whose class allowed admits, and
// takes it from free.
func (f *Fitter) Offer(free *Resources, allowed Mask) {
	for _, i := range f.order {
		want := f.demands[i].Count - f.placed[i]
		if want == 0 || !allowed.Admits(f.demands[i].Class) {
			continue
		}
		if k := min(want, free.FitCount(f.demands[i].Shape)); k > 0 {
			free.Take(f.demands[i].Shape, k)
			f.placed[i] += k
			f.remaining -= k
		}
	}
}

// Done reports whether every demanded pod is placed.
func (f *Fitter) Done() bool { return f.remaining == 0 }

// Placed is how many pods were placed in total.
func (f *Fitter) Placed() int64 { return f.demands.Total() - f.remaining }

// Place fits the demands into free, node by node, and subtracts what it places; allowed[i]
// (AnyClass when allowed is nil) is the mask of node i. It returns how many pods of each demand
// it placed, in the order of demands.
func Place(free []Resources, allowed []Mask, demands Demands) []int64 {
	f := NewFitter(demands)
	for i := range free {
		if f.Done() {
			break
		}
		f.Offer(&free[i], maskAt(allowed, i))
	}
	return f.placed
}

func maskAt(allowed []Mask, i int) Mask {
	if allowed == nil {
		return AnyClass
	}
	return allowed[i]
}

// Spare is how many more pods of shape fit into free, on nodes whose mask admits class: the
// slack left in a domain once a gang is placed there. The tightest domain (least spare) is the
// best fit.
func Spare(free []Resources, allowed []Mask, shape Resources, class int) int64 {
	var n int64
	for i := range free {
		if maskAt(allowed, i).Admits(class) {
			n += free[i].FitCount(shape)
		}
	}
	return n
}
