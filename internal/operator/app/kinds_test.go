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
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
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

// The operator's own RESTMapper, against a real apiserver whose Grove CRDs are installed only
// after the operator began to wait: the wait ends once they are served (a mapper that kept its
// first "no match" would never see them, and the operator would give up).
func TestWaitForKindsSeesCRDsInstalledLater(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{SkipGroveCRDs: true, WithoutControllerManager: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	httpClient, err := rest.HTTPClientFor(c.Config)
	require.NoError(t, err)
	mapper, err := apiutil.NewDynamicRESTMapper(c.Config, httpClient)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		done <- waitForKinds(ctx, mapper, groveKinds, 100*time.Millisecond, time.Minute, logr.Discard())
	}()
	select {
	case err := <-done:
		t.Fatalf("the wait ended before Grove's CRDs were installed: %v", err)
	case <-time.After(time.Second):
	}
	dir, err := cluster.CRDDir()
	require.NoError(t, err)
	require.NoError(t, c.InstallCRDs(ctx, dir))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the wait did not end within a minute of the CRDs being installed")
	}
}
