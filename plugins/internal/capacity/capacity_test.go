package capacity

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

const gi = int64(1) << 30

func cpu(milli int64) Resources { return Resources{MilliCPU: milli, Memory: gi, Pods: 1} }

func node(milli int64, pods int64) Resources {
	return Resources{MilliCPU: milli, Memory: 64 * gi, Pods: pods}
}

func TestFitCount(t *testing.T) {
	gpu := v1.ResourceName("nvidia.com/gpu")
	cases := []struct {
		name  string
		free  Resources
		shape Resources
		want  int64
	}{
		{"cpu bound", node(8000, 110), cpu(3000), 2},
		{"pod slots bound", node(8000, 1), cpu(1000), 1},
		{"memory bound", Resources{MilliCPU: 8000, Memory: 3 * gi, Pods: 110}, cpu(1000), 3},
		{"overcommitted node fits nothing", node(-500, 110), cpu(100), 0},
		{"missing extended resource fits nothing", node(8000, 110), Resources{MilliCPU: 100, Pods: 1, Scalar: map[v1.ResourceName]int64{gpu: 1}}, 0},
		{"extended resource bound", Resources{MilliCPU: 8000, Memory: gi, Pods: 110, Scalar: map[v1.ResourceName]int64{gpu: 4}}, Resources{MilliCPU: 100, Pods: 1, Scalar: map[v1.ResourceName]int64{gpu: 2}}, 2},
		{"request-less pod is bound by slots", node(0, 3), Resources{Pods: 1}, 3},
		{"empty shape fits nowhere", node(8000, 110), Resources{}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.free.FitCount(tc.shape))
		})
	}
}

func TestPlacePacksBiggestShapesFirstAndSubtracts(t *testing.T) {
	cases := []struct {
		name       string
		free       []Resources
		allowed    []Mask // nil: every node admits every class
		demands    Demands
		wantPlaced []int64
		wantSpare  int64 // pods of 1 CPU of class 0 still fitting afterwards
	}{
		{
			name:       "fits exactly",
			free:       []Resources{node(4000, 110), node(4000, 110)},
			demands:    Demands{{Group: "a", Shape: cpu(2000), Count: 4}},
			wantPlaced: []int64{4},
			wantSpare:  0,
		},
		{
			name:       "fragmentation: 3 CPU pods leave 1 CPU per node",
			free:       []Resources{node(4000, 110), node(4000, 110), node(4000, 110)},
			demands:    Demands{{Group: "a", Shape: cpu(3000), Count: 4}},
			wantPlaced: []int64{3},
			wantSpare:  3,
		},
		{
			name: "big pods first so small ones fill the gaps",
			free: []Resources{node(4000, 110), node(4000, 110)},
			demands: Demands{
				{Group: "small", Shape: cpu(1000), Count: 2},
				{Group: "big", Shape: cpu(3000), Count: 2},
			},
			wantPlaced: []int64{2, 2},
			wantSpare:  0,
		},
		{
			// A CPU router and GPU workers: the workers' class may not use the CPU node,
			// however much room it has, and the router's may not use the GPU nodes.
			name:    "each class only on the nodes that admit it",
			free:    []Resources{node(16000, 110), node(4000, 110), node(4000, 110)},
			allowed: []Mask{ClassMask(0), ClassMask(1), ClassMask(1)},
			demands: Demands{
				{Group: "router", Shape: cpu(1000), Count: 1, Class: 0},
				{Group: "worker", Shape: cpu(2000), Count: 6, Class: 1},
			},
			wantPlaced: []int64{1, 4},
			wantSpare:  15,
		},
		{
			name:       "a node admitting no class is not used",
			free:       []Resources{node(4000, 110), node(4000, 110)},
			allowed:    []Mask{0, AnyClass},
			demands:    Demands{{Group: "a", Shape: cpu(1000), Count: 6}},
			wantPlaced: []int64{4},
			wantSpare:  0,
		},
		{
			name:       "nothing demanded",
			free:       []Resources{node(4000, 110)},
			demands:    Demands{{Group: "a", Shape: cpu(1000), Count: 0}},
			wantPlaced: []int64{0},
			wantSpare:  4,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			placed := Place(tc.free, tc.allowed, tc.demands)
			assert.Equal(t, tc.wantPlaced, placed)
			assert.Equal(t, tc.wantSpare, Spare(tc.free, tc.allowed, cpu(1000), 0))
		})
	}
}

func TestCloneDoesNotShareExtendedResources(t *testing.T) {
	gpu := v1.ResourceName("nvidia.com/gpu")
	orig := Resources{Pods: 4, Scalar: map[v1.ResourceName]int64{gpu: 4}}
	c := orig.Clone()
	c.Take(Resources{Pods: 1, Scalar: map[v1.ResourceName]int64{gpu: 1}}, 2)
	assert.Equal(t, int64(4), orig.Scalar[gpu])
	assert.Equal(t, int64(2), c.Scalar[gpu])
}

func TestPodShapeCountsInitContainersAndOverhead(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3")}}}},
		Containers: []v1.Container{
			{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")}}},
			{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), "nvidia.com/gpu": resource.MustParse("2")}}},
		},
		Overhead: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
	}}
	shape := PodShape(pod)
	assert.Equal(t, int64(3100), shape.MilliCPU, "init container max wins, plus overhead")
	assert.Equal(t, gi, shape.Memory)
	assert.Equal(t, int64(1), shape.Pods)
	assert.Equal(t, int64(2), shape.Scalar["nvidia.com/gpu"])
}

func TestDemandsString(t *testing.T) {
	four := Resources{MilliCPU: 4000, Pods: 1}
	cases := []struct {
		name string
		d    Demands
		want string
	}{
		{"one group", Demands{{Group: "a", Shape: four, Count: 8}}, "8 pods of 4 CPU"},
		{"same shape across groups", Demands{{Group: "a", Shape: four, Count: 2}, {Group: "b", Shape: four, Count: 6}}, "8 pods of 4 CPU"},
		{"mixed shapes", Demands{{Group: "a", Shape: four, Count: 4}, {Group: "b", Shape: Resources{MilliCPU: 500, Memory: 2 * gi, Pods: 1}, Count: 2}}, "6 pods (4 of 4 CPU; 2 of 500m CPU, 2Gi memory)"},
		{"single pod", Demands{{Group: "a", Shape: four, Count: 1}}, "1 pod of 4 CPU"},
		{"empty", Demands{{Group: "a", Shape: four, Count: 0}}, "no pods"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.d.String())
		})
	}
}

func TestFitterIsDoneAsSoonAsTheDemandFits(t *testing.T) {
	f := NewFitter(Demands{{Group: "a", Shape: cpu(1000), Count: 6}})
	nodes := []Resources{node(4000, 110), node(4000, 110), node(4000, 110), node(4000, 110)}
	looked := 0
	for i := range nodes {
		if f.Done() {
			break
		}
		looked++
		f.Offer(&nodes[i], AnyClass)
	}
	assert.True(t, f.Done())
	assert.Equal(t, 2, looked, "6 pods of 1 CPU need two 4-CPU nodes, not four")
	assert.Equal(t, int64(6), f.Placed())
	assert.Equal(t, int64(2000), nodes[1].MilliCPU, "what was placed is taken from the node")
	assert.Equal(t, int64(4000), nodes[2].MilliCPU)
}

func TestMaskClasses(t *testing.T) {
	assert.True(t, AnyClass.Admits(0))
	assert.True(t, AnyClass.Admits(MaxClasses+5))
	assert.False(t, Mask(0).Admits(0))
	m := ClassMask(0) | ClassMask(3)
	assert.True(t, m.Admits(3))
	assert.False(t, m.Admits(1))
	assert.Equal(t, ClassMask(MaxClasses-1), ClassMask(MaxClasses+7), "classes beyond the last share it")
}
