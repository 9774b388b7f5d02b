package common

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// PodCliqueSetReplicaName is "<pcs>-<replica>": the headless Service and the base PodGang.
func PodCliqueSetReplicaName(pcs string, replica int) string {
	return fmt.Sprintf("%s-%d", pcs, replica)
}

// HeadlessServiceName is the headless Service of a PodCliqueSet replica.
func HeadlessServiceName(pcs string, replica int) string {
	return PodCliqueSetReplicaName(pcs, replica)
}

// HeadlessServiceAddress is the DNS name of a replica's headless Service.
func HeadlessServiceAddress(pcs string, replica int, namespace string) string {
	return fmt.Sprintf("%s.%s.svc.cluster.local", HeadlessServiceName(pcs, replica), namespace)
}

// BasePodGangName is the base PodGang of a PodCliqueSet replica.
func BasePodGangName(pcs string, replica int) string { return PodCliqueSetReplicaName(pcs, replica) }

// StandalonePodCliqueName is "<pcs>-<replica>-<clique>".
func StandalonePodCliqueName(pcs string, replica int, clique string) string {
	return fmt.Sprintf("%s-%d-%s", pcs, replica, clique)
}

// PodCliqueScalingGroupName is "<pcs>-<replica>-<group>".
func PodCliqueScalingGroupName(pcs string, replica int, group string) string {
	return fmt.Sprintf("%s-%d-%s", pcs, replica, group)
}

// ScalingGroupPodCliqueName is "<pcsg>-<groupReplica>-<clique>".
func ScalingGroupPodCliqueName(pcsgName string, groupReplica int, clique string) string {
	return fmt.Sprintf("%s-%d-%s", pcsgName, groupReplica, clique)
}

// ScaledPodGangName is the PodGang of scaling-group replica j >= minAvailable:
// "<pcsg>-<j-minAvailable>".
func ScaledPodGangName(pcsgName string, groupReplica, minAvailable int) string {
	return fmt.Sprintf("%s-%d", pcsgName, groupReplica-minAvailable)
}

// ScalingGroupReplicaName is "<pcsg>-<groupReplica>": one replica of a scaling group, as named
// in a PodGang's topologyConstraintGroupConfigs.
func ScalingGroupReplicaName(pcsgName string, groupReplica int) string {
	return fmt.Sprintf("%s-%d", pcsgName, groupReplica)
}

// PodGangNameForScalingGroupReplica is the PodGang a scaling-group replica belongs to.
func PodGangNameForScalingGroupReplica(pcs string, replica int, pcsgName string, groupReplica, minAvailable int) string {
	if groupReplica < minAvailable {
		return BasePodGangName(pcs, replica)
	}
	return ScaledPodGangName(pcsgName, groupReplica, minAvailable)
}

// PodHostname is "<pclq>-<podIndex>".
func PodHostname(pclq string, podIndex int) string { return fmt.Sprintf("%s-%d", pclq, podIndex) }

// PodGenerateName is "<pclq>-".
func PodGenerateName(pclq string) string { return pclq + "-" }

// PodServiceAccountName is the ServiceAccount of the pods of a PodCliqueSet.
func PodServiceAccountName(pcs string) string { return pcs }

// PodRoleName is the Role that lets pods of a PodCliqueSet read its pods.
func PodRoleName(pcs string) string { return fmt.Sprintf("grove.io:pcs:%s", pcs) }

// PodRoleBindingName binds PodRoleName to PodServiceAccountName.
func PodRoleBindingName(pcs string) string { return fmt.Sprintf("grove.io:pcs:%s", pcs) }

// StartupWaiterTokenSecretName is the token Secret earlier releases kept for the startup
// waiter (the waiter's token is projected now); kept to name the old Secrets in docs and tests.
func StartupWaiterTokenSecretName(pcs string) string { return pcs + "-startup-waiter-token" }

// HPAName is the HorizontalPodAutoscaler of a PodClique or PodCliqueScalingGroup.
func HPAName(target string) string { return target }

// AllReplicasResourceClaimName is "<owner>-all-<template>".
func AllReplicasResourceClaimName(owner, template string) string {
	return fmt.Sprintf("%s-all-%s", owner, template)
}

// PerReplicaResourceClaimName is "<owner>-<replica>-<template>".
func PerReplicaResourceClaimName(owner string, replica int, template string) string {
	return fmt.Sprintf("%s-%d-%s", owner, replica, template)
}

// PodResourceClaimName is the name under which a pod lists a ResourceClaim (its
// spec.resourceClaims entry, referenced by the containers' resources.claims). That name must
// be a DNS label: it is the claim name when that is one, otherwise a shortened form with a
// hash of the claim name, so different claims never share an entry.
func PodResourceClaimName(claim string) string {
	if len(validation.IsDNS1123Label(claim)) == 0 {
		return claim
	}
	sum := sha256.Sum256([]byte(claim))
	prefix := strings.Trim(strings.ReplaceAll(claim[:min(len(claim), 29)], ".", "-"), "-")
	if prefix == "" {
		return fmt.Sprintf("claim-h%x", sum[:16])
	}
	return fmt.Sprintf("%s-h%x", prefix, sum[:16])
}

// maxNameLength is the length of a DNS subdomain, the name of most objects.
const maxNameLength = 253

// ShortenName keeps an object name within the 253 characters of a DNS subdomain, replacing
// the tail of a longer one with a hash so it stays unique.
func ShortenName(v string) string { return shorten(v, maxNameLength) }

// ShortenLabelValue keeps a value within the 63 characters of a label value, replacing the
// tail of a longer one with a hash so it stays unique.
func ShortenLabelValue(v string) string { return shorten(v, 63) }

// shorten keeps v within limit characters: a longer v becomes its first limit-34 characters,
// "-h" and 32 hex digits of its SHA-256.
func shorten(v string, limit int) string {
	if len(v) <= limit {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return fmt.Sprintf("%s-h%x", strings.TrimRight(v[:limit-34], "-."), sum[:16])
}
