// Package plugins wires grove-scheduler's plugins into kube-scheduler.
package plugins

import (
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	// Registers the plugins' typed args with kube-scheduler's config scheme.
	_ "github.com/ai-dynamo/grove/pkg/api/pluginargs/scheme"
	"github.com/ai-dynamo/grove/plugins/dra"
	"github.com/ai-dynamo/grove/plugins/gang"
	"github.com/ai-dynamo/grove/plugins/preemption"
	"github.com/ai-dynamo/grove/plugins/topology"
)

// Registry returns the out-of-tree plugin registry of grove-scheduler.
func Registry() frameworkruntime.Registry {
	return frameworkruntime.Registry{
		gang.Name:     gang.New,
		topology.Name: topology.New,
		dra.Name:      dra.New,
		// Replaces DefaultPreemption in Grove's profile: gangs are preempted whole or not at all.
		preemption.Name: preemption.New,
	}
}

// SchedulerOptions are the options that add Grove's plugins to kube-scheduler's command.
func SchedulerOptions() []app.Option {
	var opts []app.Option
	for name, factory := range Registry() {
		opts = append(opts, app.WithPlugin(name, factory))
	}
	return opts
}
