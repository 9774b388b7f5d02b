// Package install proves Grove's install path on real nodes: the images `make images`
// builds are imported into two real kubelets' containerd (internal/testenv/realnode), the
// Helm chart is installed with the Helm v4 Go SDK, and grove-operator and grove-scheduler run
// as pods; workloads then run through that installed Grove, which is upgraded, loses a node
// under a running workload, and is uninstalled.
// Run it with `make e2e-install` (root, Debian packages, build tag e2einstall).
package install
