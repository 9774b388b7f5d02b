package podclique

import (
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// podPlacement is what a pod needs to know about where its PodClique sits.
type podPlacement struct {
	pcsName      string
	pcsReplica   int
	scalingGroup *scalingGroupPlacement
	// sharedGroup is the replica's base PodGang when its required domain spans PodGangs.
	sharedGroup string
	// slice is the clique's topologyConstraint.slice; nil when it is not sliced.
	slice *corev1alpha1.SliceConstraint
}

type scalingGroupPlacement struct {
	name    string
	replica int
	// templatePods is the number of pods one replica of the group has in the template.
	templatePods int32
}

// placementOf reads a PodClique's place from its labels and, for scaling-group members, the
// group's template in the PodCliqueSet.
func placementOf(pclq *corev1alpha1.PodClique, pcs *corev1alpha1.PodCliqueSet) (podPlacement, error) {
	p := podPlacement{pcsName: pcs.Name}
	var ok bool
	if p.pcsReplica, ok = common.IntLabel(pclq, apicommon.LabelPodCliqueSetReplicaIndex); !ok {
		return p, fmt.Errorf("label %s is missing or not a replica index", apicommon.LabelPodCliqueSetReplicaIndex)
	}
	if path, _ := backend.ReplicaWideRequired(pcs); path != nil {
		p.sharedGroup = apicommon.BasePodGangName(pcs.Name, p.pcsReplica)
	}
	pcsg, member := pclq.Labels[apicommon.LabelPodCliqueScalingGroup]
	p.slice = sliceOf(pclq, pcs, p.pcsReplica, pcsg, member)
	if !member {
		return p, nil
	}
	replica, ok := common.IntLabel(pclq, apicommon.LabelPodCliqueScalingGroupReplicaIndex)
	if !ok {
		return p, fmt.Errorf("label %s is missing or not a replica index", apicommon.LabelPodCliqueScalingGroupReplicaIndex)
	}
	sg := &scalingGroupPlacement{name: pcsg, replica: replica}
	for i := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		cfg := &pcs.Spec.Template.PodCliqueScalingGroupConfigs[i]
		if apicommon.PodCliqueScalingGroupName(pcs.Name, p.pcsReplica, cfg.Name) != pcsg {
			continue
		}
		for _, name := range cfg.CliqueNames {
			if c := pcs.Spec.Template.Clique(name); c != nil {
				sg.templatePods += c.Spec.Replicas
			}
		}
	}
	p.scalingGroup = sg
	return p, nil
}

// buildPod is the pod with index podIndex of a PodClique: its template plus Grove's identity
// (labels, hostname, subdomain, GROVE_* variables), the PodGang scheduling gate (unless the
// backend's scheduler holds unlisted pods itself, backend.UngatedMembers) and whatever the
// scheduler backend adds.
func buildPod(pclq *corev1alpha1.PodClique, place podPlacement, podIndex int, b backend.Backend) *corev1.Pod {
	labels := maps.Clone(pclq.Labels)
	maps.Copy(labels, common.PodCliqueSelector(place.pcsName, pclq.Name))
	labels[apicommon.LabelPodCliquePodIndex] = strconv.Itoa(podIndex)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: apicommon.PodGenerateName(pclq.Name),
			Namespace:    pclq.Namespace,
			Labels:       labels,
			Annotations:  maps.Clone(pclq.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pclq,
				corev1alpha1.SchemeGroupVersion.WithKind("PodClique"))},
		},
		Spec: *pclq.Spec.PodSpec.DeepCopy(),
	}
	pod.Spec.Hostname = apicommon.PodHostname(pclq.Name, podIndex)
	pod.Spec.Subdomain = apicommon.HeadlessServiceName(place.pcsName, place.pcsReplica)
	if backend.Gates(b) && !common.HasPodGangGate(pod) {
		pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: apicommon.SchedulingGatePodGangPendingCreation})
	}
	env := groveEnv(pclq, place)
	if sl := sliceEnv(pclq, place, podIndex, labels); sl != nil {
		env = append(env, sl...)
	}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Env = withEnv(pod.Spec.Containers[i].Env, env)
	}
	for i := range pod.Spec.InitContainers {
		pod.Spec.InitContainers[i].Env = withEnv(pod.Spec.InitContainers[i].Env, env)
	}
	if b != nil {
		b.PreparePod(pod, backend.PodGangRef{Name: pclq.Labels[apicommon.LabelPodGang], PodGroup: pclq.Name, SharedGroup: place.sharedGroup})
	}
	return pod
}

// groveEnv are the peer-discovery variables of a pod. The pod index comes from the pod's own
// label so the variable and the hostname always agree.
func groveEnv(pclq *corev1alpha1.PodClique, place podPlacement) []corev1.EnvVar {
	env := []corev1.EnvVar{
		{Name: apicommon.EnvPodCliqueSetName, Value: place.pcsName},
		{Name: apicommon.EnvPodCliqueSetIndex, Value: strconv.Itoa(place.pcsReplica)},
		{Name: apicommon.EnvPodCliqueName, Value: pclq.Name},
		{Name: apicommon.EnvHeadlessService, Value: apicommon.HeadlessServiceAddress(place.pcsName, place.pcsReplica, pclq.Namespace)},
		{Name: apicommon.EnvPodIndex, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: fmt.Sprintf("metadata.labels['%s']", apicommon.LabelPodCliquePodIndex),
		}}},
	}
	if sg := place.scalingGroup; sg != nil {
		env = append(env,
			corev1.EnvVar{Name: apicommon.EnvPodCliqueScalingGroupName, Value: sg.name},
			corev1.EnvVar{Name: apicommon.EnvPodCliqueScalingGroupIndex, Value: strconv.Itoa(sg.replica)},
			corev1.EnvVar{Name: apicommon.EnvPodCliqueScalingGroupTemplateNumPods, Value: strconv.Itoa(int(sg.templatePods))},
		)
	}
	return env
}

// withEnv sets Grove's variables, replacing user variables of the same name (Grove owns them).
func withEnv(env, grove []corev1.EnvVar) []corev1.EnvVar {
	out := make([]corev1.EnvVar, 0, len(env)+len(grove))
	owned := map[string]bool{}
	for _, e := range grove {
		owned[e.Name] = true
	}
	for _, e := range env {
		if !owned[e.Name] {
			out = append(out, e)
		}
	}
	return append(out, grove...)
}
