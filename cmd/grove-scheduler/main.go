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
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/ai-dynamo/grove/pkg/version"
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
	// kube-scheduler's --version prints only "Kubernetes vX.Y.Z"; plain --version prints
	// Grove's release too (--version=raw keeps kube-scheduler's detailed form).
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if f := c.Flags().Lookup("version"); f != nil && f.Value.String() == "true" {
			_, err := fmt.Fprintln(c.OutOrStdout(), version.Get().Line("grove-scheduler"))
			return err
		}
		if err := validateConfig(c); err != nil {
			return err
		}
		return run(c, args)
	}
	return cmd, nil
}

// validateConfig refuses, before the scheduler starts, a --config whose profiles enable a Grove
// plugin without the gang plugin it depends on. kube-scheduler reads the file again (with the
// same loader) when it starts; a file it cannot read is left for it to report.
func validateConfig(c *cobra.Command) error {
	f := c.Flags().Lookup("config")
	if f == nil || f.Value.String() == "" {
		return nil
	}
	cfg, err := options.LoadConfigFromFile(klog.Background(), f.Value.String())
	if err != nil {
		return nil
	}
	if errs := plugins.ValidateProfiles(cfg); len(errs) > 0 {
		return fmt.Errorf("invalid --config %s: %w", f.Value.String(), errs.ToAggregate())
	}
	return nil
}
