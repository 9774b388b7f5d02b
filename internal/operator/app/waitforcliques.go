package app

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ai-dynamo/grove/internal/operator/startupwaiter"
)

// newWaitForCliquesCommand is the startup-ordering init container: grove-operator's image runs
// it in pods whose cliques start after others.
func newWaitForCliquesCommand() *cobra.Command {
	cfg := &startupwaiter.Config{}
	credentialsDir := startupwaiter.DefaultCredentialsDir
	cmd := &cobra.Command{
		Use:   startupwaiter.CommandName,
		Short: "Blocks until every parent PodClique has minAvailable Ready pods (startup-ordering init container)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cfg.Validate(); err != nil {
				return err
			}
			restCfg, err := startupwaiter.InClusterConfig(credentialsDir)
			if err != nil {
				return err
			}
			client, err := kubernetes.NewForConfig(restCfg)
			if err != nil {
				return fmt.Errorf("creating the API client: %w", err)
			}
			w := &startupwaiter.Waiter{Client: client, Config: *cfg, Log: zap.New().WithName(startupwaiter.CommandName)}
			return w.Wait(cmd.Context())
		},
	}
	cfg.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&credentialsDir, "credentials-dir", credentialsDir, "directory holding the ServiceAccount token and the cluster CA (ca.crt)")
	return cmd
}
