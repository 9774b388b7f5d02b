package webhook

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/core"
	k8sv1 "k8s.io/kubernetes/pkg/apis/core/v1"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/capabilities"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// Kubernetes' pod validation asks the process's capabilities whether privileged containers
// are allowed; in a process other than the apiserver they default to "no", which refused every
// privileged container (RDMA workers: privileged, IPC_LOCK, hostIPC) whatever the cluster allows.
// Whether a pod may be privileged is the cluster's decision (the apiserver's --allow-privileged,
// Pod Security admission of the namespace): the dry-run create (dryrun.go) asks it.
func init() {
	capabilities.Setup(true, 0)
}

// validatePodTemplates validates every clique's pod template the way the apiserver validates
// a pod on create: v1 defaults applied, converted to the internal type, then Kubernetes' own
// pod-spec validation. A template the apiserver would refuse is refused here, with a field path
// into the PodCliqueSet, instead of being admitted and never producing a pod. This lives in
// the webhook rather than pkg/api so the public API package does not depend on
// k8s.io/kubernetes.
func validatePodTemplates(pcs *corev1alpha1.PodCliqueSet) field.ErrorList {
	var errs field.ErrorList
	cp := field.NewPath("spec", "template", "cliques")
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		errs = append(errs, validatePodTemplate(c, cp.Index(i))...)
	}
	return errs
}

func validatePodTemplate(c *corev1alpha1.PodCliqueTemplateSpec, p *field.Path) field.ErrorList {
	sp := p.Child("spec", "podSpec")
	pod := &corev1.Pod{Spec: *c.Spec.PodSpec.DeepCopy()}
	pod.Labels, pod.Annotations = c.Labels, c.Annotations
	// The operator sets these on every pod; the user's values never reach the apiserver.
	pod.Spec.Hostname, pod.Spec.Subdomain = "", ""
	k8sv1.SetObjectDefaults_Pod(pod)
	internal := &core.Pod{}
	if err := k8sv1.Convert_v1_Pod_To_core_Pod(pod, internal, nil); err != nil {
		return field.ErrorList{field.Invalid(sp, "", "cannot be converted to a pod: "+err.Error())}
	}
	opts := podutil.GetValidationOptionsFromPodSpecAndMeta(&internal.Spec, nil, &internal.ObjectMeta, nil)
	errs := corevalidation.ValidatePodSpec(&internal.Spec, &internal.ObjectMeta, sp, opts)
	errs = append(errs, corevalidation.ValidatePodSpecificAnnotations(internal.Annotations, &internal.Spec, p.Child("annotations"), opts)...)
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(sp.Child("ephemeralContainers"), "cannot be set on pod creation"))
	}
	// Names grove-operator adds to pods of cliques that start after others.
	for j, ic := range c.Spec.PodSpec.InitContainers {
		if ic.Name == apicommon.StartupWaiterContainerName {
			errs = append(errs, field.Invalid(sp.Child("initContainers").Index(j).Child("name"), ic.Name, "is reserved for grove-operator's startup waiter"))
		}
	}
	for j, ctr := range c.Spec.PodSpec.Containers {
		if ctr.Name == apicommon.StartupWaiterContainerName {
			errs = append(errs, field.Invalid(sp.Child("containers").Index(j).Child("name"), ctr.Name, "is reserved for grove-operator's startup waiter"))
		}
	}
	for j, v := range c.Spec.PodSpec.Volumes {
		if v.Name == apicommon.StartupWaiterTokenVolumeName {
			errs = append(errs, field.Invalid(sp.Child("volumes").Index(j).Child("name"), v.Name, "is reserved for grove-operator's startup waiter"))
		}
	}
	return errs
}
