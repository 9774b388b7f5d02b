package volcano

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Config is the volcano profile's config.
type Config struct {
	// DefaultQueue is the Volcano queue of PodCliqueSets that name none with
	// scheduling.grove.io/volcano-queue. Default: Volcano's own queue "default" (as upstream
	// Grove).
	// +optional
	DefaultQueue string `json:"defaultQueue,omitempty"`
	// TopologyTiers map ClusterTopology node label keys to the HyperNode tiers Volcano's
	// network topology has for them. A required topology domain is only accepted when its key
	// is listed here.
	// +optional
	TopologyTiers []TopologyTier `json:"topologyTiers,omitempty"`
}

// TopologyTier maps a node label key to a HyperNode tier, by number or by name.
type TopologyTier struct {
	// Key is the node label key (a ClusterTopology level's key).
	Key string `json:"key"`
	// Tier is the HyperNode spec.tier of the key's domains; written as
	// networkTopology.highestTierAllowed.
	// +optional
	Tier *int32 `json:"tier,omitempty"`
	// TierName is the HyperNode spec.tierName of the key's domains (Volcano's label discovery
	// names a tier by its node label); written as networkTopology.highestTierName.
	// +optional
	TierName string `json:"tierName,omitempty"`
}

// defaultAndValidate fills defaults and checks the configuration.
func (c *Config) defaultAndValidate() error {
	if c.DefaultQueue == "" {
		c.DefaultQueue = DefaultQueue
	}
	errs := validateQueueName(c.DefaultQueue, field.NewPath("defaultQueue"))
	seen := map[string]int{}
	for i, t := range c.TopologyTiers {
		p := field.NewPath("topologyTiers").Index(i)
		for _, msg := range validation.IsQualifiedName(t.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
		}
		if j, dup := seen[t.Key]; dup {
			errs = append(errs, field.Duplicate(p.Child("key"), fmt.Sprintf("%s (also topologyTiers[%d])", t.Key, j)))
		}
		seen[t.Key] = i
		switch {
		case t.Tier == nil && t.TierName == "":
			errs = append(errs, field.Required(p, "set tier (the HyperNode tier number) or tierName"))
		case t.Tier != nil && t.TierName != "":
			errs = append(errs, field.Forbidden(p.Child("tierName"), "set tier or tierName, not both: Volcano takes one of highestTierAllowed and highestTierName"))
		case t.Tier != nil && *t.Tier < 0:
			errs = append(errs, field.Invalid(p.Child("tier"), *t.Tier, "must not be negative"))
		case len(t.TierName) > 253:
			errs = append(errs, field.TooLong(p.Child("tierName"), t.TierName, 253))
		}
	}
	return errs.ToAggregate()
}

// tierFor is the mapping of a node label key.
func (c *Config) tierFor(key string) (TopologyTier, bool) {
	for _, t := range c.TopologyTiers {
		if t.Key == key {
			return t, true
		}
	}
	return TopologyTier{}, false
}

// describeTiers lists the configured mappings for error messages.
func (c *Config) describeTiers() string {
	if len(c.TopologyTiers) == 0 {
		return "none"
	}
	var s []string
	for _, t := range c.TopologyTiers {
		if t.Tier != nil {
			s = append(s, fmt.Sprintf("%s→tier %d", t.Key, *t.Tier))
		} else {
			s = append(s, fmt.Sprintf("%s→tier %q", t.Key, t.TierName))
		}
	}
	return strings.Join(s, ", ")
}
