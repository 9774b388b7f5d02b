package plugins

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/features"
)

func TestFeatureDefaultsCanBeOverriddenByTheFlag(t *testing.T) {
	// Restore the process's gates afterwards.
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.NominatedNodeNameForExpectation, true)
	require.NoError(t, ApplyFeatureDefaults())
	assert.False(t, utilfeature.DefaultFeatureGate.Enabled(features.NominatedNodeNameForExpectation))
	// What --feature-gates=NominatedNodeNameForExpectation=true does after the defaults.
	require.NoError(t, utilfeature.DefaultMutableFeatureGate.Set("NominatedNodeNameForExpectation=true"))
	assert.True(t, utilfeature.DefaultFeatureGate.Enabled(features.NominatedNodeNameForExpectation))
}
