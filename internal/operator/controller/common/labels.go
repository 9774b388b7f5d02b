package common

import (
	"maps"
	"strconv"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
)

// ComponentLabels are the default labels of a PodCliqueSet's objects plus their component.
func ComponentLabels(pcsName, component string) map[string]string {
	l := apicommon.DefaultLabels(pcsName)
	l[apicommon.LabelComponentKey] = component
	return l
}

// ReplicaLabels are ComponentLabels of an object that belongs to one PodCliqueSet replica.
func ReplicaLabels(pcsName, component string, replica int) map[string]string {
	l := ComponentLabels(pcsName, component)
	l[apicommon.LabelPodCliqueSetReplicaIndex] = strconv.Itoa(replica)
	return l
}

// PodCliqueSetSelector selects every pod of a PodCliqueSet.
func PodCliqueSetSelector(pcsName string) labels.Selector {
	return labels.SelectorFromSet(apicommon.DefaultLabels(pcsName))
}

// PodCliqueSelector selects the pods of one PodClique.
func PodCliqueSelector(pcsName, pclqName string) map[string]string {
	l := apicommon.DefaultLabels(pcsName)
	l[apicommon.LabelPodClique] = pclqName
	return l
}

// IntLabel parses an integer label; ok is false when it is missing or malformed.
func IntLabel(obj client.Object, key string) (int, bool) {
	v, ok := obj.GetLabels()[key]
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(v)
	return i, err == nil && i >= 0
}

// PodCliqueSetName is the PodCliqueSet an object belongs to (its part-of label).
func PodCliqueSetName(obj client.Object) string {
	return obj.GetLabels()[apicommon.LabelPartOfKey]
}

// WithLabels returns existing overlaid with ours: labels others put on an object survive.
func WithLabels(existing, ours map[string]string) map[string]string {
	out := maps.Clone(existing)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, ours)
	return out
}
