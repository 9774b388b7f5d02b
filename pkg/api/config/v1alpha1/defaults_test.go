package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ai-dynamo/grove/pkg/version"
)

// The startup waiter defaults to this build's own grove-operator image, never another
// project's image or a floating tag.
func TestStartupWaiterDefaultsToThisBuildsOperatorImage(t *testing.T) {
	c := &OperatorConfiguration{}
	SetDefaults_OperatorConfiguration(c)
	assert.Equal(t, version.Image("grove-operator"), c.StartupWaiter.Image)
	assert.Equal(t, "localhost/grove/grove-operator:"+version.Get().Grove, c.StartupWaiter.Image)

	c = &OperatorConfiguration{StartupWaiter: StartupWaiterConfiguration{Image: "registry.example.com/grove-operator:v1"}}
	SetDefaults_OperatorConfiguration(c)
	assert.Equal(t, "registry.example.com/grove-operator:v1", c.StartupWaiter.Image, "a configured image is kept")
}
