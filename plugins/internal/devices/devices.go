// Package devices counts DRA devices for whole gangs: how many devices of each kind the
// still unallocated ResourceClaims of a gang ask for, and how many free devices published in
// ResourceSlices each candidate topology domain can reach. It is grove-scheduler's DRA
// arithmetic; the scheduler's own DynamicResources plugin still allocates the devices.
//
// The count is a pre-check: it never rejects a gang that could be allocated. A device that
// matches several kinds counts for each of them, and requests the count cannot judge
// (prioritized lists, admin access) ask for nothing.
package devices

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Kind is what one request asks for: a device class, narrowed by the request's own selectors.
type Kind struct {
	Class string
	// Selectors is the request's CEL expressions as one expression (joined by "&&"), "" for none.
	Selectors string
}

func (k Kind) String() string {
	if k.Selectors == "" {
		return fmt.Sprintf("class %s", k.Class)
	}
	return fmt.Sprintf("class %s matching %s", k.Class, k.Selectors)
}

// Need is what a gang's unallocated claims ask for, per kind.
type Need struct {
	Count map[Kind]int64
	// Claims name the claims behind each kind, for messages.
	Claims map[Kind][]string
	seen   map[string]bool
}

// NewNeed returns an empty need.
func NewNeed() *Need {
	return &Need{Count: map[Kind]int64{}, Claims: map[Kind][]string{}, seen: map[string]bool{}}
}

// AddClaim counts the requests of a claim that is not allocated yet, once however many pods
// share it.
func (n *Need) AddClaim(c *resourcev1.ResourceClaim) {
	key := c.Namespace + "/" + c.Name
	if n.seen[key] || c.Status.Allocation != nil {
		return
	}
	n.seen[key] = true
	for _, r := range c.Spec.Devices.Requests {
		e := r.Exactly
		if e == nil || (e.AdminAccess != nil && *e.AdminAccess) {
			continue
		}
		count := e.Count
		if e.AllocationMode == resourcev1.DeviceAllocationModeAll || count < 1 {
			count = 1
		}
		var sel []string
		for _, s := range e.Selectors {
			if s.CEL != nil {
				sel = append(sel, s.CEL.Expression)
			}
		}
		if len(sel) > 1 {
			for i := range sel {
				sel[i] = "(" + sel[i] + ")"
			}
		}
		k := Kind{Class: e.DeviceClassName, Selectors: strings.Join(sel, " && ")}
		n.Count[k] += count
		if l := n.Claims[k]; len(l) == 0 || l[len(l)-1] != c.Name {
			n.Claims[k] = append(l, c.Name)
		}
	}
}

// Empty reports whether nothing is needed.
func (n *Need) Empty() bool { return len(n.Count) == 0 }

// Kinds lists the kinds needed, sorted.
func (n *Need) Kinds() []Kind {
	out := make([]Kind, 0, len(n.Count))
	for k := range n.Count {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Class != out[j].Class {
			return out[i].Class < out[j].Class
		}
		return out[i].Selectors < out[j].Selectors
	})
	return out
}

// Device is a published device and the nodes it can be used from.
type Device struct {
	// ID is "<driver>/<pool>/<device>", as allocations name it.
	ID     string
	Driver string
	Device resourcev1.Device
	// Exactly one of NodeName, NodeSelector and AllNodes is set.
	NodeName     string
	NodeSelector *v1.NodeSelector
	AllNodes     bool
}

// ID names a device as allocation results do.
func ID(driver, pool, device string) string { return driver + "/" + pool + "/" + device }

// FromSlices lists the devices of the newest generation of every pool.
func FromSlices(slices []*resourcev1.ResourceSlice) []Device {
	newest := map[string]int64{}
	for _, s := range slices {
		pool := s.Spec.Driver + "/" + s.Spec.Pool.Name
		if g, ok := newest[pool]; !ok || s.Spec.Pool.Generation > g {
			newest[pool] = s.Spec.Pool.Generation
		}
	}
	var out []Device
	for _, s := range slices {
		if s.Spec.Pool.Generation != newest[s.Spec.Driver+"/"+s.Spec.Pool.Name] {
			continue
		}
		for _, d := range s.Spec.Devices {
			dev := Device{ID: ID(s.Spec.Driver, s.Spec.Pool.Name, d.Name), Driver: s.Spec.Driver, Device: d}
			nodeName, selector, all := s.Spec.NodeName, s.Spec.NodeSelector, s.Spec.AllNodes
			if s.Spec.PerDeviceNodeSelection != nil && *s.Spec.PerDeviceNodeSelection {
				nodeName, selector, all = d.NodeName, d.NodeSelector, d.AllNodes
			}
			switch {
			case nodeName != nil && *nodeName != "":
				dev.NodeName = *nodeName
			case selector != nil:
				dev.NodeSelector = selector
			case all != nil && *all:
				dev.AllNodes = true
			default:
				continue
			}
			out = append(out, dev)
		}
	}
	return out
}

// Node is a candidate node.
type Node struct {
	Name   string
	Labels map[string]string
}

// Matcher tells whether a device is of a kind.
type Matcher func(k Kind, d *Device) bool

// Domain is one value of a topology key (or all nodes) and the free devices of each needed
// kind its nodes can reach.
type Domain struct {
	Value  string
	Nodes  []string
	Offers map[Kind]int64
}

// Short returns the first kind (in Need.Kinds order) the domain offers fewer of than needed.
func (d Domain) Short(need *Need) (Kind, bool) {
	for _, k := range need.Kinds() {
		if d.Offers[k] < need.Count[k] {
			return k, true
		}
	}
	return Kind{}, false
}

// Evaluate returns, for each value of key among nodes (sorted), the free devices of each
// needed kind the value's nodes can reach; with key "" there is one domain of all nodes.
// free reports whether a device is not allocated.
func Evaluate(key string, nodes []Node, devs []Device, free func(id string) bool, need *Need, match Matcher) []Domain {
	byValue := map[string][]Node{}
	for _, n := range nodes {
		if key == "" {
			byValue[""] = append(byValue[""], n)
		} else if v, ok := n.Labels[key]; ok {
			byValue[v] = append(byValue[v], n)
		}
	}
	values := make([]string, 0, len(byValue))
	for v := range byValue {
		values = append(values, v)
	}
	sort.Strings(values)
	// Each free device is matched once; domains then only count what they reach.
	kinds := need.Kinds()
	type candidate struct {
		dev   *Device
		kinds []Kind
	}
	var cands []candidate
	for i := range devs {
		dev := &devs[i]
		if !free(dev.ID) {
			continue
		}
		c := candidate{dev: dev}
		for _, k := range kinds {
			if match(k, dev) {
				c.kinds = append(c.kinds, k)
			}
		}
		if len(c.kinds) > 0 {
			cands = append(cands, c)
		}
	}
	selectors := map[*v1.NodeSelector]*nodeaffinity.NodeSelector{}
	out := make([]Domain, 0, len(values))
	for _, v := range values {
		d := Domain{Value: v, Offers: map[Kind]int64{}}
		names := map[string]bool{}
		for _, n := range byValue[v] {
			d.Nodes = append(d.Nodes, n.Name)
			names[n.Name] = true
		}
		for _, c := range cands {
			if reachable(c.dev, byValue[v], names, selectors) {
				for _, k := range c.kinds {
					d.Offers[k]++
				}
			}
		}
		out = append(out, d)
	}
	return out
}

func reachable(dev *Device, nodes []Node, names map[string]bool, cache map[*v1.NodeSelector]*nodeaffinity.NodeSelector) bool {
	switch {
	case dev.AllNodes:
		return true
	case dev.NodeName != "":
		return names[dev.NodeName]
	}
	sel, ok := cache[dev.NodeSelector]
	if !ok {
		sel, _ = nodeaffinity.NewNodeSelector(dev.NodeSelector)
		cache[dev.NodeSelector] = sel
	}
	if sel == nil {
		return false
	}
	for _, n := range nodes {
		if sel.Match(&v1.Node{ObjectMeta: metaFor(n)}) {
			return true
		}
	}
	return false
}

// MatchingNodes are the nodes a node selector (of an allocation) admits.
func MatchingNodes(selector *v1.NodeSelector, nodes []Node) []string {
	sel, err := nodeaffinity.NewNodeSelector(selector)
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range nodes {
		if sel.Match(&v1.Node{ObjectMeta: metaFor(n)}) {
			out = append(out, n.Name)
		}
	}
	return out
}

func metaFor(n Node) metav1.ObjectMeta { return metav1.ObjectMeta{Name: n.Name, Labels: n.Labels} }
