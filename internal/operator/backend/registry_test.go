package backend

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

type fakeBackend struct{ name configv1alpha1.SchedulerName }

func (f fakeBackend) Name() configv1alpha1.SchedulerName                        { return f.name }
func (f fakeBackend) Init(context.Context, InitContext) error                   { return nil }
func (f fakeBackend) SyncPodGang(context.Context, *schedv1alpha1.PodGang) error { return nil }
func (f fakeBackend) PreparePod(*corev1.Pod, PodGangRef)                        {}
func (f fakeBackend) ValidatePodCliqueSet(context.Context, *corev1alpha1.PodCliqueSet) ([]string, field.ErrorList) {
	return nil, nil
}

func factories() map[configv1alpha1.SchedulerName]Factory {
	m := map[configv1alpha1.SchedulerName]Factory{}
	for _, n := range configv1alpha1.SupportedSchedulerNames {
		m[n] = func() Backend { return fakeBackend{name: n} }
	}
	return m
}

func pcsWithSchedulers(names ...string) *corev1alpha1.PodCliqueSet {
	pcs := &corev1alpha1.PodCliqueSet{}
	for i, n := range names {
		c := &corev1alpha1.PodCliqueTemplateSpec{Name: string(rune('a' + i))}
		c.Spec.PodSpec.SchedulerName = n
		pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, c)
	}
	return pcs
}

func TestRegistryResolvesOneBackendPerPodCliqueSet(t *testing.T) {
	r, err := NewRegistry(configv1alpha1.SchedulerConfiguration{
		Profiles:           []configv1alpha1.SchedulerProfile{{Name: "grove-scheduler"}, {Name: "kai-scheduler"}},
		DefaultProfileName: "grove-scheduler",
	}, factories())
	require.NoError(t, err)
	cases := []struct {
		name      string
		pcs       *corev1alpha1.PodCliqueSet
		want      configv1alpha1.SchedulerName
		wantField string
	}{
		{"empty means default", pcsWithSchedulers("", ""), "grove-scheduler", ""},
		{"explicit default", pcsWithSchedulers("grove-scheduler", ""), "grove-scheduler", ""},
		{"other enabled backend", pcsWithSchedulers("kai-scheduler", "kai-scheduler"), "kai-scheduler", ""},
		{"mixed backends", pcsWithSchedulers("kai-scheduler", ""), "", "spec.template.cliques[1].spec.podSpec.schedulerName"},
		{"not enabled", pcsWithSchedulers("koord-scheduler"), "", "spec.template.cliques[0].spec.podSpec.schedulerName"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, errs := r.ForPodCliqueSet(tc.pcs)
			if tc.wantField != "" {
				require.Len(t, errs, 1)
				assert.Equal(t, tc.wantField, errs[0].Field)
				return
			}
			require.Empty(t, errs)
			assert.Equal(t, tc.want, b.Name())
		})
	}
}

// A scheduler Grove has no backend for is refused with the reason and the backends Grove has;
// a backend Grove has but this operator has not enabled lists the enabled ones.
func TestRegistryExplainsSchedulersWithoutABackend(t *testing.T) {
	r, err := NewRegistry(configv1alpha1.SchedulerConfiguration{
		Profiles:           []configv1alpha1.SchedulerProfile{{Name: "grove-scheduler"}, {Name: "volcano"}},
		DefaultProfileName: "grove-scheduler",
	}, factories())
	require.NoError(t, err)

	_, errs := r.ForPodCliqueSet(pcsWithSchedulers("", "lpx-scheduler"))
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.template.cliques[1].spec.podSpec.schedulerName", errs[0].Field)
	assert.Equal(t, field.ErrorTypeInvalid, errs[0].Type)
	assert.Contains(t, errs[0].Detail, `scheduler "lpx-scheduler" is not supported: a proprietary scheduler`)
	assert.Contains(t, errs[0].Detail, "Grove's scheduler backends are grove-scheduler, default-scheduler, kai-scheduler, koord-scheduler, volcano")
	assert.Contains(t, errs[0].Detail, "enabled in this operator: grove-scheduler, volcano")

	_, errs = r.ForPodCliqueSet(pcsWithSchedulers("my-scheduler"))
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Detail, `scheduler "my-scheduler" is not supported: Grove has no backend for it`)

	_, errs = r.ForPodCliqueSet(pcsWithSchedulers("kai-scheduler"))
	require.Len(t, errs, 1)
	assert.Equal(t, field.ErrorTypeNotSupported, errs[0].Type, "a backend of Grove that is not enabled")

	b, errs := r.ForPodCliqueSet(pcsWithSchedulers("volcano", "volcano"))
	require.Empty(t, errs)
	assert.Equal(t, configv1alpha1.SchedulerNameVolcano, b.Name())
}

func TestRegistryRejectsUnknownOrDisabledDefault(t *testing.T) {
	_, err := NewRegistry(configv1alpha1.SchedulerConfiguration{
		Profiles: []configv1alpha1.SchedulerProfile{{Name: "grove-scheduler"}}, DefaultProfileName: "kai-scheduler",
	}, factories())
	require.ErrorContains(t, err, `default scheduler profile "kai-scheduler" is not enabled`)
	_, err = NewRegistry(configv1alpha1.SchedulerConfiguration{
		Profiles: []configv1alpha1.SchedulerProfile{{Name: "grove-scheduler"}}, DefaultProfileName: "grove-scheduler",
	}, map[configv1alpha1.SchedulerName]Factory{})
	require.ErrorContains(t, err, "no such backend")
}
