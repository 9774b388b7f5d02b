// Command kubectl-grove is the `kubectl grove` plugin: tree, why and topology views of Grove
// workloads. It takes every kubectl connection flag (--kubeconfig, --context, -n, ...); the
// logic lives in internal/kubectlgrove.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/ai-dynamo/grove/internal/kubectlgrove"
)

func main() {
	if err := newCommand().Execute(); err != nil {
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:           "kubectl-grove",
		Short:         "See Grove's gangs: tree, why and topology views of PodCliqueSets and PodGangs",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	flags.AddFlags(root.PersistentFlags())
	connect := func() (kubectlgrove.Clients, string, error) {
		cfg, err := flags.ToRESTConfig()
		if err != nil {
			return kubectlgrove.Clients{}, "", err
		}
		ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			return kubectlgrove.Clients{}, "", err
		}
		c, err := kubectlgrove.NewClients(cfg)
		return c, ns, err
	}
	root.AddCommand(&cobra.Command{
		Use:   "tree PODCLIQUESET",
		Short: "Draw a PodCliqueSet: replica → PodGang (phase, Scheduled, domain) → PodClique → pod → node and domains",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := connect()
			if err != nil {
				return err
			}
			s, err := kubectlgrove.Read(cmd.Context(), c, ns, args[0], "", "")
			if err != nil {
				return err
			}
			s.Render(cmd.OutOrStdout())
			return nil
		},
	})
	root.AddCommand(&cobra.Command{
		Use:   "why (pcs|pgang|pod)/NAME",
		Short: "Explain what holds a PodCliqueSet, PodGang or pod back, and what to do next",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, err := kubectlgrove.ParseRef(args)
			if err != nil {
				return err
			}
			c, ns, err := connect()
			if err != nil {
				return err
			}
			return kubectlgrove.Why(cmd.Context(), c, ns, kind, name, cmd.OutOrStdout())
		},
	})
	root.AddCommand(&cobra.Command{
		Use:   "topology [CLUSTERTOPOLOGY]",
		Short: "Show a ClusterTopology's domains with free capacity and the gangs inside each",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := connect()
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return kubectlgrove.Topology(cmd.Context(), c, name, cmd.OutOrStdout())
		},
	})
	root.SetContext(context.Background())
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w\nSee '%s --help'", err, c.CommandPath())
	})
	return root
}
