package factories

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
)

func TestEveryFactoryBuildsTheBackendItIsRegisteredUnder(t *testing.T) {
	for name, f := range All() {
		assert.Equal(t, name, f().Name())
	}
}

func TestNewRegistryFromProfiles(t *testing.T) {
	r, err := NewRegistry(configv1alpha1.SchedulerConfiguration{
		Profiles:           []configv1alpha1.SchedulerProfile{{Name: configv1alpha1.SchedulerNameGrove}, {Name: configv1alpha1.SchedulerNameKube}},
		DefaultProfileName: configv1alpha1.SchedulerNameGrove,
	})
	require.NoError(t, err)
	assert.Equal(t, configv1alpha1.SchedulerNameGrove, r.Default().Name())
	assert.Len(t, All(), len(configv1alpha1.SupportedSchedulerNames), "every supported scheduler has a backend")
	b, ok := r.Get("default-scheduler")
	require.True(t, ok)
	assert.Equal(t, configv1alpha1.SchedulerNameKube, b.Name())

	_, err = NewRegistry(configv1alpha1.SchedulerConfiguration{
		Profiles: []configv1alpha1.SchedulerProfile{{Name: "lpx-scheduler"}}, DefaultProfileName: "lpx-scheduler",
	})
	require.ErrorContains(t, err, "no such backend in this build")
}
