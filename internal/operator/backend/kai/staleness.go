package kai

import (
	"encoding/json"
	"fmt"

	"k8s.io/client-go/discovery"
)

// KAI evicts a running gang that has fewer running pods than its minMember once it has been
// so for the PodGroup's stalenessGracePeriod (the scheduler's globalDefaultStalenessGracePeriod,
// 60s by default, when unset). Grove already acts on such a gang: after the PodCliqueSet's
// terminationDelay it terminates and recreates the gang, and until then it replaces the lost
// pods. KAI evicting the survivors first would cut terminationDelay short, so Grove turns KAI's
// eviction off for its PodGroups with a negative grace period, where the PodGroup API has the
// field (KAI v0.17 and later). Older KAI versions lack it; there KAI's global default applies.
const neverStale = "-1s"

// podGroupHasStalenessGracePeriod tells whether the cluster's KAI PodGroup schema (OpenAPI v3)
// has spec.stalenessGracePeriod.
func podGroupHasStalenessGracePeriod(d discovery.DiscoveryInterface) (bool, error) {
	return podGroupHasSpecField(d, "stalenessGracePeriod")
}

// podGroupHasMinSubGroup tells whether the cluster's KAI PodGroup schema has spec.minSubGroup
// (hierarchical gangs: a subGroup that requires a number of its child subGroups).
func podGroupHasMinSubGroup(d discovery.DiscoveryInterface) (bool, error) {
	return podGroupHasSpecField(d, "minSubGroup")
}

func podGroupHasSpecField(d discovery.DiscoveryInterface, name string) (bool, error) {
	paths, err := d.OpenAPIV3().Paths()
	if err != nil {
		return false, fmt.Errorf("reading the OpenAPI v3 paths: %w", err)
	}
	gv, ok := paths["apis/"+PodGroupGVK.Group+"/"+PodGroupGVK.Version]
	if !ok {
		return false, nil
	}
	raw, err := gv.Schema("application/json")
	if err != nil {
		return false, fmt.Errorf("reading the OpenAPI v3 schema of %s: %w", PodGroupGVK.GroupVersion(), err)
	}
	return hasSpecField(raw, name)
}

type openAPISchema struct {
	Properties map[string]openAPISchema `json:"properties"`
	AllOf      []openAPISchema          `json:"allOf"`
	GVKs       []struct {
		Group   string `json:"group"`
		Version string `json:"version"`
		Kind    string `json:"kind"`
	} `json:"x-kubernetes-group-version-kind"`
}

// hasSpecField finds the PodGroup schema of an OpenAPI v3 document by its group-version-kind
// and tells whether its spec declares the field.
func hasSpecField(doc []byte, name string) (bool, error) {
	var d struct {
		Components struct {
			Schemas map[string]openAPISchema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return false, fmt.Errorf("decoding the OpenAPI v3 schema of %s: %w", PodGroupGVK.GroupVersion(), err)
	}
	for _, s := range d.Components.Schemas {
		for _, gvk := range s.GVKs {
			if gvk.Group != PodGroupGVK.Group || gvk.Version != PodGroupGVK.Version || gvk.Kind != PodGroupGVK.Kind {
				continue
			}
			spec := s.Properties["spec"]
			if _, ok := spec.Properties[name]; ok {
				return true, nil
			}
			for _, a := range spec.AllOf {
				if _, ok := a.Properties[name]; ok {
					return true, nil
				}
			}
			return false, nil
		}
	}
	return false, nil
}
