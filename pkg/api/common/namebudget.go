package common

// Budget of generated names. Pod hostnames ("<pclq>-<podIndex>") must be DNS labels and every
// generated object name is also a label value, so both are limited to 63 characters; a pod's
// name is its PodClique name plus "-" and the apiserver's random suffix. Admission reserves
// ReservedIndexDigits digits for every index embedded in a name, so a PodCliqueSet can scale
// out without its names outgrowing the limit.
const (
	MaxGeneratedNameLength    = 63
	GeneratedNameSuffixLength = 5
	ReservedIndexDigits       = 4
)

// MaxReplicas bounds every replica count of a PodCliqueSet, its scaling groups and its
// PodCliques (spec fields, autoscaler maxReplicas and the scale subresources, where the CRDs
// enforce it): the highest index is then MaxReplicas-1, which fits in ReservedIndexDigits
// digits, so no replica count the apiserver admits can make a generated name outgrow the
// budget admission checked. The CRD markers repeat the literal; a test keeps them equal.
const MaxReplicas = 10000
