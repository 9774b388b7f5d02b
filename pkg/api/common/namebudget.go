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
