// Package topology is grove-scheduler's topology plugin: it packs a gang into one domain of a
// node-label key, chosen once per gang attempt.
package topology

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/ai-dynamo/grove/pkg/api/pluginargs"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = pluginargs.TopologyPluginName

// Plugin is the topology plugin.
type Plugin struct {
	args   pluginargs.TopologyArgs
	handle fwk.Handle
}

var _ fwk.Plugin = &Plugin{}

// New builds the plugin from its (defaulted) args.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, ok := obj.(*pluginargs.TopologyArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type TopologyArgs, got %T", obj)
	}
	if err := pluginargs.ValidateTopologyArgs(field.NewPath("pluginConfig").Key(Name).Child("args"), args); err != nil {
		return nil, err
	}
	return &Plugin{args: *args, handle: h}, nil
}

// Name returns the plugin name.
func (p *Plugin) Name() string { return Name }
