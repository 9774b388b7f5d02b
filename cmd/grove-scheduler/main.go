// grove-scheduler is kube-scheduler with Grove's gang, topology and DRA plugins. Run it as a
// secondary scheduler: its profile's schedulerName (default grove-scheduler) selects it.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/ai-dynamo/grove/plugins"
)

func main() {
	cmd := app.NewSchedulerCommand(plugins.SchedulerOptions()...)
	cmd.Use = "grove-scheduler"
	os.Exit(cli.Run(cmd))
}
