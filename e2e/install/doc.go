// Package install proves Grove's install path on a real node: the images `make images`
// builds are imported into a real kubelet's containerd (internal/testenv/realnode), the Helm
// chart is installed with the Helm v4 Go SDK, and grove-operator and grove-scheduler run as
// pods; workloads then run through that installed Grove, which is upgraded and uninstalled.
// Run it with `make e2e-install` (root, Debian packages, build tag e2einstall).
package install
