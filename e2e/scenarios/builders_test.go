//go:build e2e

package scenarios

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// oneCPUNode is the capacity of a node that holds exactly one oneCPUPod.
var oneCPUNode = map[corev1.ResourceName]string{corev1.ResourceCPU: "1", corev1.ResourceMemory: "4Gi"}

func podSpec(cpu string) corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}
}

type cliqueOpt func(*corev1alpha1.PodCliqueTemplateSpec)

func clique(name string, replicas int32, cpu string, opts ...cliqueOpt) *corev1alpha1.PodCliqueTemplateSpec {
	c := &corev1alpha1.PodCliqueTemplateSpec{Name: name, Spec: corev1alpha1.PodCliqueSpec{RoleName: name, Replicas: replicas, PodSpec: podSpec(cpu)}}
	for _, o := range opts {
		o(c)
	}
	return c
}

func minAvailable(n int32) cliqueOpt {
	return func(c *corev1alpha1.PodCliqueTemplateSpec) { c.Spec.MinAvailable = ptr.To(n) }
}

func cliqueRequired(domain string) cliqueOpt {
	return func(c *corev1alpha1.PodCliqueTemplateSpec) {
		c.TopologyConstraint = &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Required: corev1alpha1.TopologyDomain(domain)}}
	}
}

func pcs(ns, name string, replicas int32, cliques ...*corev1alpha1.PodCliqueTemplateSpec) *corev1alpha1.PodCliqueSet {
	return &corev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1alpha1.PodCliqueSetSpec{Replicas: replicas, Template: corev1alpha1.PodCliqueSetTemplateSpec{Cliques: cliques}},
	}
}

func withGroup(p *corev1alpha1.PodCliqueSet, name string, replicas, minAvail int32, cliques ...string) *corev1alpha1.PodCliqueSet {
	p.Spec.Template.PodCliqueScalingGroupConfigs = append(p.Spec.Template.PodCliqueScalingGroupConfigs, corev1alpha1.PodCliqueScalingGroupConfig{
		Name: name, CliqueNames: cliques, Replicas: ptr.To(replicas), MinAvailable: ptr.To(minAvail)})
	return p
}

func withTopology(p *corev1alpha1.PodCliqueSet, topologyName, required, preferred string) *corev1alpha1.PodCliqueSet {
	p.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: topologyName,
		Pack: &corev1alpha1.TopologyPackConstraint{Required: corev1alpha1.TopologyDomain(required), Preferred: corev1alpha1.TopologyDomain(preferred)}}
	return p
}
