// Package plugins wires grove-scheduler's plugins into kube-scheduler.
package plugins

import (
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	// Registers the plugins' typed args with kube-scheduler's config scheme.
	_ "github.com/ai-dynamo/grove/pkg/api/pluginargs/scheme"
	"github.com/ai-dynamo/grove/plugins/dra"
	"github.com/ai-dynamo/grove/plugins/gang"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
	"github.com/ai-dynamo/grove/plugins/preemption"
	"github.com/ai-dynamo/grove/plugins/topology"
)

// Registry returns the out-of-tree plugin registry of grove-scheduler. Its plugins share one
// gang record per gang through the state it makes here and hands to each factory (per profile:
// the plugins of one profile share its gang cache). Each call makes new state.
func Registry() frameworkruntime.Registry {
	profiles := gangcache.NewProfiles()
	return frameworkruntime.Registry{
		gang.Name:     gang.New(profiles),
		topology.Name: topology.New(profiles),
		dra.Name:      dra.New(profiles),
		// Replaces DefaultPreemption in Grove's profile: gangs are preempted whole or not at all.
		preemption.Name: preemption.New(profiles),
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
