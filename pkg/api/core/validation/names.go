package validation

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// validateGeneratedNameBudget rejects PodCliqueSets whose generated names would not fit:
// every PodClique name must leave room for its pods' names ("<pclq>-" + random suffix) and
// hostnames ("<pclq>-<podIndex>"), both limited to 63 characters. Indices are counted with
// at least common.ReservedIndexDigits digits (more when the spec already asks for more).
func validateGeneratedNameBudget(pcs *corev1alpha1.PodCliqueSet) field.ErrorList {
	pcsName := pcs.Name
	if pcsName == "" && pcs.GenerateName != "" {
		pcsName = pcs.GenerateName + strings.Repeat("x", common.GeneratedNameSuffixLength)
	}
	if pcsName == "" {
		return nil
	}
	t := &pcs.Spec.Template
	replicaIndex := widestIndex(pcs.Spec.Replicas)
	var errs field.ErrorList
	for i, c := range t.Cliques {
		if c == nil || c.Name == "" {
			continue
		}
		podIndex := widestIndex(maxReplicas(c.Spec.Replicas, c.Spec.ScaleConfig))
		var pclq, shorten string
		if g := t.ScalingGroupOf(c.Name); g != nil {
			groupIndex := widestIndex(maxReplicas(corev1alpha1.ScalingGroupReplicas(g), g.ScaleConfig))
			pclq = common.ScalingGroupPodCliqueName(common.PodCliqueScalingGroupName(pcsName, replicaIndex, g.Name), groupIndex, c.Name)
			shorten = fmt.Sprintf("metadata.name, scaling group %q or clique %q", g.Name, c.Name)
		} else {
			pclq = common.StandalonePodCliqueName(pcsName, replicaIndex, c.Name)
			shorten = fmt.Sprintf("metadata.name or clique %q", c.Name)
		}
		p := templatePath.Child("cliques").Index(i).Child("name")
		podName := len(pclq) + 1 + common.GeneratedNameSuffixLength
		hostname := len(common.PodHostname(pclq, podIndex))
		longest := max(podName, hostname)
		if longest > common.MaxGeneratedNameLength {
			errs = append(errs, field.Invalid(p, c.Name, fmt.Sprintf(
				"generated pod names and hostnames (PodClique %q plus \"-\" and a %d-character suffix) would be %d characters, more than %d: shorten %s by %d characters",
				pclq, longest-len(pclq)-1, longest, common.MaxGeneratedNameLength, shorten, longest-common.MaxGeneratedNameLength)))
		}
	}
	return errs
}

// widestIndex is the widest index below count written as nines, with at least
// ReservedIndexDigits digits.
func widestIndex(count int32) int {
	digits := max(len(strconv.Itoa(int(max(count-1, 0)))), common.ReservedIndexDigits)
	index := 0
	for range digits {
		index = index*10 + 9
	}
	return index
}

func maxReplicas(replicas int32, a *corev1alpha1.AutoScalingConfig) int32 {
	if a != nil && a.MaxReplicas > replicas {
		return a.MaxReplicas
	}
	return replicas
}
