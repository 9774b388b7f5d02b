// Package app is grove-operator's command: flags, configuration and the controller manager.
package app

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	configvalidation "github.com/ai-dynamo/grove/pkg/api/config/validation"
)

// Options are grove-operator's command-line flags.
type Options struct {
	// ConfigFile is the OperatorConfiguration file.
	ConfigFile string
}

// AddFlags registers the flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ConfigFile, "config", "", "path to the OperatorConfiguration file (required)")
}

// LoadConfig reads, defaults and validates the configuration; every problem is reported with
// its field path.
func (o *Options) LoadConfig() (*configv1alpha1.OperatorConfiguration, error) {
	if o.ConfigFile == "" {
		return nil, errors.New("--config is required: pass the path of an OperatorConfiguration file")
	}
	cfg, err := configv1alpha1.Load(o.ConfigFile)
	if err != nil {
		return nil, err
	}
	if err := configvalidation.Error(configvalidation.ValidateOperatorConfiguration(cfg)); err != nil {
		return nil, fmt.Errorf("%s: %w", o.ConfigFile, err)
	}
	return cfg, nil
}
