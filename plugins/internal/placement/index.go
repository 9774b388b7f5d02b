package placement

import (
	"sort"
	"sync"
)

// Index is what planning reads of the nodes' names and topology labels, kept apart from their
// capacity so that it can be built once for a list of nodes and reused by every gang planned
// over the same list (Input.Index): on thousands of nodes, looking each node's labels up again
// for every gang was most of choosing its domain.
type Index struct {
	byName map[string]int
	names  []string
	labels []map[string]string

	mu    sync.Mutex
	byKey map[string]*domains
}

// domains groups the nodes (positions in Input.Nodes) by their value of one label.
type domains struct {
	byValue map[string][]int
	values  []string // sorted
	// of is, per node position, the position in values of the node's value; -1 when the node
	// has no such label. Replica spreads count per domain through it, in slices, not maps.
	of []int32
}

// NewIndex indexes nodes, which must stay in this order, with these names and labels, in every
// Input the index is given to (their capacity may differ).
func NewIndex(nodes []Node) *Index {
	x := &Index{byName: make(map[string]int, len(nodes)), names: make([]string, len(nodes)), labels: make([]map[string]string, len(nodes)),
		byKey: map[string]*domains{}}
	for i := range nodes {
		x.byName[nodes[i].Name] = i
		x.names[i], x.labels[i] = nodes[i].Name, nodes[i].Labels
	}
	return x
}

// Node returns the name and labels of the node at position i.
func (x *Index) Node(i int) (string, map[string]string) { return x.names[i], x.labels[i] }

// domainsOf returns the nodes grouped by their value of key, built on first use. The caller
// does not change what it returns.
func (x *Index) domainsOf(key string) *domains {
	x.mu.Lock()
	defer x.mu.Unlock()
	if d, ok := x.byKey[key]; ok {
		return d
	}
	d := &domains{byValue: map[string][]int{}}
	for i, labels := range x.labels {
		if v, ok := labels[key]; ok {
			d.byValue[v] = append(d.byValue[v], i)
		}
	}
	d.values = make([]string, 0, len(d.byValue))
	for v := range d.byValue {
		d.values = append(d.values, v)
	}
	sort.Strings(d.values)
	d.of = make([]int32, len(x.labels))
	for i := range d.of {
		d.of[i] = -1
	}
	for v, value := range d.values {
		for _, i := range d.byValue[value] {
			d.of[i] = int32(v)
		}
	}
	x.byKey[key] = d
	return d
}
