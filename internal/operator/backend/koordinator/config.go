package koordinator

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Gang modes, match policies and QoS classes Koordinator knows.
var (
	gangModes     = []string{"Strict", "NonStrict"}
	matchPolicies = []string{"once-satisfied", "only-waiting", "waiting-and-running"}
	qosClasses    = []string{"LSE", "LSR", "LS", "BE"}
)

// NodeTopologyLayer is Koordinator's built-in layer of single nodes.
const NodeTopologyLayer = "NodeTopologyLayer"

// Config is the koord-scheduler profile's config.
type Config struct {
	// GangMode is Strict (default: a failed member fails the whole gang) or NonStrict.
	// +optional
	GangMode string `json:"gangMode,omitempty"`
	// MatchPolicy decides which members count towards minMember: once-satisfied (default),
	// only-waiting or waiting-and-running.
	// +optional
	MatchPolicy string `json:"matchPolicy,omitempty"`
	// ScheduleTimeoutSeconds is how long Koordinator waits for a gang to assemble; Koordinator's
	// own default applies when unset.
	// +optional
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`
	// QoSClass, when set, is put on every pod as koordinator.sh/qosClass: LSE, LSR, LS or BE.
	// +optional
	QoSClass string `json:"qosClass,omitempty"`
	// TopologyLayers maps ClusterTopology node label keys to the layers of Koordinator's
	// ClusterNetworkTopology. Only these three layers are supported; host defaults to
	// kubernetes.io/hostname on NodeTopologyLayer.
	// +optional
	TopologyLayers TopologyLayers `json:"topologyLayers,omitempty"`
}

// TopologyLayers are the Koordinator layers a topology constraint can be translated to.
type TopologyLayers struct {
	Host  *TopologyLayer `json:"host,omitempty"`
	Rack  *TopologyLayer `json:"rack,omitempty"`
	Block *TopologyLayer `json:"block,omitempty"`
}

// TopologyLayer maps a node label key to a Koordinator topology layer.
type TopologyLayer struct {
	// Key is the node label key (a ClusterTopology level's key).
	Key string `json:"key"`
	// Layer is the topologyLayer of that key in the ClusterNetworkTopology, e.g. RackLayer.
	Layer string `json:"layer"`
}

// defaultAndValidate fills defaults and checks the configuration.
func (c *Config) defaultAndValidate() error {
	if c.GangMode == "" {
		c.GangMode = "Strict"
	}
	if c.MatchPolicy == "" {
		c.MatchPolicy = "once-satisfied"
	}
	if c.TopologyLayers.Host == nil {
		c.TopologyLayers.Host = &TopologyLayer{Key: "kubernetes.io/hostname", Layer: NodeTopologyLayer}
	}
	var errs field.ErrorList
	if !slices.Contains(gangModes, c.GangMode) {
		errs = append(errs, field.NotSupported(field.NewPath("gangMode"), c.GangMode, gangModes))
	}
	if !slices.Contains(matchPolicies, c.MatchPolicy) {
		errs = append(errs, field.NotSupported(field.NewPath("matchPolicy"), c.MatchPolicy, matchPolicies))
	}
	if c.ScheduleTimeoutSeconds != nil && *c.ScheduleTimeoutSeconds < 1 {
		errs = append(errs, field.Invalid(field.NewPath("scheduleTimeoutSeconds"), *c.ScheduleTimeoutSeconds, "must be at least 1"))
	}
	if c.QoSClass != "" && !slices.Contains(qosClasses, c.QoSClass) {
		errs = append(errs, field.NotSupported(field.NewPath("qosClass"), c.QoSClass, qosClasses))
	}
	keys, layers := map[string]string{}, map[string]string{}
	for _, l := range c.TopologyLayers.list() {
		p := field.NewPath("topologyLayers", l.name)
		for _, msg := range validation.IsQualifiedName(l.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), l.Key, msg))
		}
		if l.Layer == "" {
			errs = append(errs, field.Required(p.Child("layer"), "the ClusterNetworkTopology layer of the key"))
		}
		if other, dup := keys[l.Key]; dup {
			errs = append(errs, field.Duplicate(p.Child("key"), fmt.Sprintf("%s (also %s)", l.Key, other)))
		}
		if other, dup := layers[l.Layer]; dup && l.Layer != "" {
			errs = append(errs, field.Duplicate(p.Child("layer"), fmt.Sprintf("%s (also %s)", l.Layer, other)))
		}
		keys[l.Key], layers[l.Layer] = l.name, l.name
	}
	return errs.ToAggregate()
}

type namedLayer struct {
	name string
	TopologyLayer
}

// list is the configured layers, narrowest first.
func (t TopologyLayers) list() []namedLayer {
	var out []namedLayer
	for _, l := range []struct {
		name string
		l    *TopologyLayer
	}{{"host", t.Host}, {"rack", t.Rack}, {"block", t.Block}} {
		if l.l != nil {
			out = append(out, namedLayer{name: l.name, TopologyLayer: *l.l})
		}
	}
	return out
}

// layerFor is the Koordinator layer of a node label key.
func (t TopologyLayers) layerFor(key string) (string, bool) {
	for _, l := range t.list() {
		if l.Key == key {
			return l.Layer, true
		}
	}
	return "", false
}

// describe lists the configured mappings for error messages.
func (t TopologyLayers) describe() string {
	var s []string
	for _, l := range t.list() {
		s = append(s, fmt.Sprintf("%s: %s→%s", l.name, l.Key, l.Layer))
	}
	return fmt.Sprintf("%v", s)
}
