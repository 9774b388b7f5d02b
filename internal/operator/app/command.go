package app

import (
	"fmt"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
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
