// Package scenarios is Grove's end-to-end suite: grove-operator and grove-scheduler run as
// processes with their real configurations against the local control plane with kwok nodes,
// and each scenario asserts exact counts and placements. Run it with `make e2e`.
package scenarios
