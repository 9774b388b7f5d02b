// Package gang is grove-scheduler's gang plugin: PodGang quorum before scheduling and an
// all-or-nothing Permit barrier.
package gang

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/ai-dynamo/grove/pkg/api/pluginargs"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = pluginargs.GangPluginName

// Plugin is the gang plugin.
type Plugin struct {
	args   pluginargs.GangArgs
	handle fwk.Handle
}

var _ fwk.Plugin = &Plugin{}

// New builds the plugin from its (defaulted) args.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, ok := obj.(*pluginargs.GangArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type GangArgs, got %T", obj)
	}
	if err := pluginargs.ValidateGangArgs(field.NewPath("pluginConfig").Key(Name).Child("args"), args); err != nil {
		return nil, err
	}
	return &Plugin{args: *args, handle: h}, nil
}

// Name returns the plugin name.
func (p *Plugin) Name() string { return Name }
