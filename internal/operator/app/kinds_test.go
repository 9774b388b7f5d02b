package app

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// servedAfter is a RESTMapper whose kinds are served only from its n-th lookup round on, as
// when the operator starts before the apiserver has established Grove's CRDs.
type servedAfter struct {
	meta.RESTMapper
	mu     sync.Mutex
	rounds map[schema.GroupKind]int
	after  int
}

func (m *servedAfter) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.mu.Lock()
	m.rounds[gk]++
	served := m.rounds[gk] > m.after
	m.mu.Unlock()
	if !served {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}

func TestWaitForKinds(t *testing.T) {
	served := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range groveKinds {
		served.Add(gvk, meta.RESTScopeNamespace)
	}
	cases := []struct {
		name    string
		after   int // lookup rounds before the kinds are served
		wantErr string
	}{
		{"served from the start", 0, ""},
		{"served after a few polls", 3, ""},
		{"never served", 1 << 30, "PodCliqueSet.grove.io, PodClique.grove.io"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := &servedAfter{RESTMapper: served, rounds: map[schema.GroupKind]int{}, after: tc.after}
			err := waitForKinds(context.Background(), m, groveKinds, time.Millisecond, 200*time.Millisecond, logr.Discard())
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.Contains(t, err.Error(), "PodGang.scheduler.grove.io")
		})
	}
}
