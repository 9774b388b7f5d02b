// Package common holds what Grove's reconcilers share: the labels that tie objects to their
// PodCliqueSet, the PodClique built from a clique template (by the PodCliqueSet controller for
// standalone cliques and by the scaling-group controller for members), pod state helpers,
// status conditions and create-or-patch.
package common
