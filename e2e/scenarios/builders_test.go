//go:build e2e

package scenarios

import (
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
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

// pack is a topology constraint; topologyName is only set at the top of a PodCliqueSet's
// constraints (children inherit it).
func pack(topologyName, required, preferred string) *corev1alpha1.TopologyConstraint {
	return &corev1alpha1.TopologyConstraint{TopologyName: topologyName,
		Pack: &corev1alpha1.TopologyPackConstraint{Required: corev1alpha1.TopologyDomain(required), Preferred: corev1alpha1.TopologyDomain(preferred)}}
}

func cliqueRequired(domain string) cliqueOpt {
	return func(c *corev1alpha1.PodCliqueTemplateSpec) { c.TopologyConstraint = pack("", domain, "") }
}

// cliqueSharing gives the clique resourceSharing entries of PodCliqueSet templates.
func cliqueSharing(scope corev1alpha1.ResourceSharingScope, templates ...string) cliqueOpt {
	return func(c *corev1alpha1.PodCliqueTemplateSpec) {
		for _, tpl := range templates {
			c.ResourceSharing = append(c.ResourceSharing, corev1alpha1.ResourceSharingSpec{Name: tpl, Scope: scope})
		}
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
	p.Spec.Template.TopologyConstraint = pack(topologyName, required, preferred)
	return p
}

// group returns the PodCliqueSet's scaling group config of that name.
func group(p *corev1alpha1.PodCliqueSet, name string) *corev1alpha1.PodCliqueScalingGroupConfig {
	for i := range p.Spec.Template.PodCliqueScalingGroupConfigs {
		if g := &p.Spec.Template.PodCliqueScalingGroupConfigs[i]; g.Name == name {
			return g
		}
	}
	panic("no scaling group " + name)
}

// withClaimTemplate declares an inline ResourceClaimTemplate asking for one device of class.
func withClaimTemplate(p *corev1alpha1.PodCliqueSet, name, class string) *corev1alpha1.PodCliqueSet {
	p.Spec.Template.ResourceClaimTemplates = append(p.Spec.Template.ResourceClaimTemplates, corev1alpha1.ResourceClaimTemplateConfig{
		Name: name, TemplateSpec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "dev", Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1}}}}}}})
	return p
}
