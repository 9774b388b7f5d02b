package kube

import (
	"fmt"

	"github.com/ai-dynamo/grove/pkg/api/common"
)

// PodGroupName is the Workload API PodGroup (scheduling.k8s.io) of one PodGroup of a PodGang,
// through which default-scheduler gang-schedules it: "<podgang>-<podgroup>", shortened
// (common.ShortenName) beyond 253 characters. Pods join it through their immutable
// spec.schedulingGroup.podGroupName, so the PodGang is part of the name: a PodClique that moves
// to another PodGang (minAvailable changed) gets a new PodGroup for its new pods while its
// running pods keep the old one.
func PodGroupName(podGang, podGroup string) string {
	return common.ShortenName(fmt.Sprintf("%s-%s", podGang, podGroup))
}

// CompositePodGroupName is the Workload API CompositePodGroup of a PodGang, the parent of its
// PodGroups: the PodGang's name.
func CompositePodGroupName(podGang string) string { return podGang }

// GroupConfigCompositePodGroupName is the Workload API CompositePodGroup of one
// topologyConstraintGroupConfig of a PodGang (a scaling-group replica packed into its own
// domain): "<podgang>-<config>", shortened beyond 253 characters. The config's name alone can be
// a scaled PodGang's name, whose CompositePodGroup it would collide with.
func GroupConfigCompositePodGroupName(podGang, config string) string {
	return common.ShortenName(fmt.Sprintf("%s-%s", podGang, config))
}
