// Package cluster runs a real Kubernetes control plane on loopback for tests and for local
// use: etcd, kube-apiserver and (optionally) kube-controller-manager, built from Go modules
// into bin/ by `make k8s-bins`.
//
// Every process it starts runs in its own process group with a parent-death signal, and is
// stopped by Stop; a test binary that is killed (or times out) takes its control plane with
// it, and cluster-down stops the processes recorded in the state directory.
package cluster
