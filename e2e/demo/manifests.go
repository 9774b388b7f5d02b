package demo

import "embed"

// Manifests are the demo's ClusterTopology and workloads.
//
//go:embed manifests/*.yaml
var Manifests embed.FS
