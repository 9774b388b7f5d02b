package backend

import (
	"bytes"
	"errors"
	"fmt"

	kjson "sigs.k8s.io/json"
)

// DecodeConfig strictly decodes a profile's backend-specific configuration into cfg: field
// names match case-sensitively and unknown or duplicate fields are errors, so a misspelt
// option fails start-up instead of being ignored. An empty configuration leaves cfg unchanged.
func DecodeConfig(raw []byte, cfg any) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil
	}
	strictErrs, err := kjson.UnmarshalStrict(trimmed, cfg)
	if err != nil {
		return fmt.Errorf("decoding scheduler profile config: %w", err)
	}
	if len(strictErrs) > 0 {
		return fmt.Errorf("decoding scheduler profile config: %w", errors.Join(strictErrs...))
	}
	return nil
}

// LoadConfig is the config step of a backend's Init: it decodes the profile's configuration
// (DecodeConfig) and checks it with validate, which may also default it (nil: nothing to check).
// A failed check names the scheduler the profile configures.
func LoadConfig[T any](ic InitContext, scheduler string, validate func(*T) error) (T, error) {
	var cfg T
	if err := DecodeConfig(ic.Config, &cfg); err != nil {
		return cfg, err
	}
	if validate != nil {
		if err := validate(&cfg); err != nil {
			return cfg, fmt.Errorf("invalid %s config: %w", scheduler, err)
		}
	}
	return cfg, nil
}
