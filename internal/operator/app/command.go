package app

import (
	"fmt"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ai-dynamo/grove/pkg/version"
)

// NewCommand returns the grove-operator command.
func NewCommand() *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:           "grove-operator",
		Short:         "Runs Grove's controllers and admission webhooks",
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := opts.LoadConfig()
			if err != nil {
				return err
			}
			return Run(cmd.Context(), cfg)
		},
	}
	// cobra adds --version; the template prints Grove's and Kubernetes' versions on one line.
	cmd.Version = version.Get().Grove
	cmd.SetVersionTemplate(version.Get().Line("grove-operator") + "\n")
	opts.AddFlags(cmd.Flags())
	cmd.AddCommand(newWaitForCliquesCommand())
	return cmd
}

// Execute runs the command with a context cancelled on SIGTERM/SIGINT.
func Execute() error {
	ctx := ctrl.SetupSignalHandler()
	cmd := NewCommand()
	if err := cmd.ExecuteContext(ctx); err != nil {
		return fmt.Errorf("grove-operator: %w", err)
	}
	return nil
}
