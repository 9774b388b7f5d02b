package gangcache

import (
	"strconv"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// Slices are the slicings of gang key's PodGroups (PodGang podgroups[].slices), by PodGroup,
// with the nodes each slice's members hold (bound or assumed), read from their
// grove.io/slice-index label. nil without slices.
func (c *Cache) Slices(key string) map[string]placement.Slicing {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.gangs[key]
	if e == nil || e.podGang == nil {
		return nil
	}
	var out map[string]placement.Slicing
	for _, pg := range e.podGang.Spec.PodGroups {
		if pg.Slices == nil || len(pg.Slices.Sizes) == 0 {
			continue
		}
		sl := placement.Slicing{Key: pg.Slices.TopologyKey, Required: pg.Slices.Required, Held: map[int][]string{}}
		for _, s := range pg.Slices.Sizes {
			sl.Sizes = append(sl.Sizes, int64(s))
		}
		if out == nil {
			out = map[string]placement.Slicing{}
		}
		out[pg.Name] = sl
	}
	if out == nil {
		return nil
	}
	for _, m := range e.members {
		sl, ok := out[m.group]
		if !ok || !m.holdsNode() || m.pod == nil {
			continue
		}
		if i, ok := SliceIndex(m.pod.Labels); ok && i < len(sl.Sizes) {
			sl.Held[i] = append(sl.Held[i], m.node)
		}
	}
	return out
}

// SliceIndex is the slice a pod belongs to (its grove.io/slice-index label).
func SliceIndex(labels map[string]string) (int, bool) {
	v, ok := labels[common.LabelSliceIndex]
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(v)
	return i, err == nil && i >= 0
}
