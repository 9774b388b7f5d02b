package plugins

import (
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/features"
)

// FeatureDefaults are kube-scheduler feature gates grove-scheduler runs with by default; its
// --feature-gates flag still overrides them.
//
// NominatedNodeNameForExpectation (on in kube-scheduler) writes status.nominatedNodeName of every
// pod that waits at Permit, so external components know it is about to bind. Every member of a
// gang but the last waits at the barrier, usually for milliseconds, so the gate costs one API
// write per member — about a third more writes per gang pod — for little use.
var FeatureDefaults = map[string]bool{
	string(features.NominatedNodeNameForExpectation): false,
}

// ApplyFeatureDefaults sets FeatureDefaults on the process's feature gates. Call it before the
// command line is parsed.
func ApplyFeatureDefaults() error {
	return utilfeature.DefaultMutableFeatureGate.SetFromMap(FeatureDefaults)
}
