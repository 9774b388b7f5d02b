package common

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func gangAt(rv string) *schedv1alpha1.PodGang {
	return &schedv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", ResourceVersion: rv}}
}

func TestOwnWrites(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "g"}
	now := time.Unix(1000, 0)
	tests := []struct {
		name   string
		wrote  string // resourceVersion of the last write; "" when none
		after  time.Duration
		cached *schedv1alpha1.PodGang
		forget bool
		behind bool
	}{
		{name: "never written", cached: gangAt("5")},
		{name: "created, not in the cache yet", wrote: "10", behind: true},
		{name: "cache shows an older copy", wrote: "10", cached: gangAt("9"), behind: true},
		{name: "cache shows the write", wrote: "10", cached: gangAt("10")},
		{name: "cache shows a later write", wrote: "10", cached: gangAt("11")},
		{name: "the write is older than the ttl", wrote: "10", after: 2 * time.Minute, behind: false},
		{name: "forgotten after a delete", wrote: "10", forget: true},
		{name: "unparsable resourceVersion in the cache", wrote: "10", cached: gangAt("x")},
		{name: "unparsable resourceVersion written", wrote: "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewOwnWrites(time.Minute)
			w.now = func() time.Time { return now }
			if tt.wrote != "" {
				w.Wrote(gangAt(tt.wrote))
			}
			if tt.forget {
				w.Forget(key)
			}
			w.now = func() time.Time { return now.Add(tt.after) }
			if tt.cached == nil {
				assert.Equal(t, tt.behind, w.Behind(key, nil))
			} else {
				assert.Equal(t, tt.behind, w.Behind(key, tt.cached))
			}
		})
	}
}

// TestOwnWritesDropsTheEntryOnceCaughtUp: after the cache caught up once, an older copy (a
// relist's replay is impossible, but a second writer's) is not held back by the old write.
func TestOwnWritesDropsTheEntryOnceCaughtUp(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "g"}
	w := NewOwnWrites(time.Minute)
	w.Wrote(gangAt("10"))
	assert.True(t, w.Behind(key, nil))
	assert.False(t, w.Behind(key, gangAt("10")))
	assert.False(t, w.Behind(key, nil), "the entry is gone once the cache showed the write")
}

// TestOwnWritesSweepsExpiredEntries: entries of objects never looked at again do not pile up.
func TestOwnWritesSweepsExpiredEntries(t *testing.T) {
	now := time.Unix(1000, 0)
	w := NewOwnWrites(time.Minute)
	w.now = func() time.Time { return now }
	for i := range 63 {
		g := gangAt("1")
		g.Name = "g" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		w.Wrote(g)
	}
	now = now.Add(2 * time.Minute)
	w.Wrote(gangAt("2"))
	assert.Len(t, w.byKey, 1, "the expired entries were swept")
}
