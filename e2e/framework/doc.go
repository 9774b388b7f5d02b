// Package framework runs Grove the way a user does, on one machine: the local control plane,
// kwok-simulated nodes, and grove-operator and grove-scheduler as processes with their real
// configuration files (webhooks on). make demo and make e2e are built on it.
package framework
