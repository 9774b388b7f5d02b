package demo

import "embed"

// Manifests are the demo's ClusterTopology and workloads.
//
//go:embed manifests/*.yaml
var Manifests embed.FS

// Names the demo's manifests and steps use (TestDemoUpAndDown checks the demo by them).
const (
	// Namespace holds the demo's workloads.
	Namespace = "demo"
	// Workload is the PodCliqueSet of manifests/inference.yaml, ScalingGroup its scaling group
	// that the demo scales out.
	Workload     = "inference"
	ScalingGroup = "workers"
	// TooBig is the PodCliqueSet of manifests/too-big.yaml: it fits no rack and stays pending.
	TooBig = "too-big"
)
