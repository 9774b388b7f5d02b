// Package charts holds Grove's Helm chart (charts/grove) and the tests that render and lint
// it with the Helm Go SDK and keep it equal to the kustomize manifests under config/.
package charts
