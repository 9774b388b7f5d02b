// grove-scheduler is kube-scheduler with Grove's gang, topology and DRA plugins. Run it as a
// secondary scheduler: its profile's schedulerName (default grove-scheduler) selects it.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/ai-dynamo/grove/plugins"
)

func main() {
	cmd, err := newCommand()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(cli.Run(cmd))
}

// newCommand is kube-scheduler's command with Grove's plugins and feature gate defaults.
func newCommand() (*cobra.Command, error) {
	if err := plugins.ApplyFeatureDefaults(); err != nil {
		return nil, err
	}
	cmd := app.NewSchedulerCommand(plugins.SchedulerOptions()...)
	cmd.Use = "grove-scheduler"
	return cmd, nil
}
