// Package dra is grove-scheduler's gang-aware DRA plugin. It runs next to the scheduler's own
// DynamicResources plugin, which still allocates devices.
package dra

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/ai-dynamo/grove/pkg/api/pluginargs"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = pluginargs.DRAPluginName

// Plugin is the DRA plugin.
type Plugin struct {
	args   pluginargs.DRAArgs
	handle fwk.Handle
}

var _ fwk.Plugin = &Plugin{}

// New builds the plugin from its (defaulted) args.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, ok := obj.(*pluginargs.DRAArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type DRAArgs, got %T", obj)
	}
	if err := pluginargs.ValidateDRAArgs(field.NewPath("pluginConfig").Key(Name).Child("args"), args); err != nil {
		return nil, err
	}
	return &Plugin{args: *args, handle: h}, nil
}

// Name returns the plugin name.
func (p *Plugin) Name() string { return Name }
