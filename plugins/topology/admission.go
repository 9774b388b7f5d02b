package topology

import (
	v1 "k8s.io/api/core/v1"

	"github.com/ai-dynamo/grove/plugins/internal/capacity"
	"github.com/ai-dynamo/grove/plugins/internal/nodes"
)

// admission is whether a node admits some node rules: unknown until first asked.
type admission uint8

const (
	unknown admission = iota
	admits
	refuses
)

// admissions returns, per class of classes, what the nodes of p.nodes.list are known to say
// of its rules, positions as in the list; p.nodes is locked.
func (p *Plugin) admissions(classes *nodes.Classes) [][]admission {
	if p.nodes.admits == nil {
		p.nodes.admits = map[string][]admission{}
	}
	out := make([][]admission, classes.Len())
	for c := range out {
		key := classes.Key(c)
		row := p.nodes.admits[key]
		if row == nil {
			row = make([]admission, len(p.nodes.list))
			p.nodes.admits[key] = row
		}
		out[c] = row
	}
	return out
}

// admitted is classes.Allowed(node) for node, the node object at position i of p.nodes.list,
// read from rows (admissions) and recorded there when not known yet.
func admitted(rows [][]admission, classes *nodes.Classes, i int, node *v1.Node) capacity.Mask {
	var m capacity.Mask
	for c, row := range rows {
		if row[i] == unknown {
			row[i] = refuses
			if classes.Admits(c, node) {
				row[i] = admits
			}
		}
		if row[i] == admits {
			m |= capacity.ClassMask(c)
		}
	}
	return m
}
