// Package client holds the typed Go clients of Grove's CRD groups, generated from pkg/api by
// k8s.io/code-generator (`make generate`; never edit the subpackages by hand):
//
//   - clientset/versioned: a clientset with GroveV1alpha1() (grove.io: PodCliqueSet, PodClique,
//     PodCliqueScalingGroup, ClusterTopology, ClusterTopologyBinding) and SchedulerV1alpha1()
//     (scheduler.grove.io: PodGang), including UpdateStatus/ApplyStatus and the scale
//     subresource; clientset/versioned/fake is an in-memory clientset for unit tests.
//   - applyconfiguration: builders for server-side apply (Apply and ApplyStatus).
//   - listers and informers/externalversions: cache-backed reads.
package client
