// Package apitest tests Grove's generated CRDs in a real kube-apiserver: they install, the
// samples are accepted, CEL rules reject bad input with field paths, and the scale
// subresources work.
package apitest
