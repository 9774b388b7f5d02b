package backend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// DecodeConfig strictly decodes a profile's backend-specific configuration into cfg: unknown
// fields and trailing data are errors, so a misspelt option fails start-up instead of being
// ignored. An empty configuration leaves cfg unchanged.
func DecodeConfig(raw json.RawMessage, cfg any) error {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		return fmt.Errorf("decoding scheduler profile config: %w", err)
	}
	if err := dec.Decode(&struct{}{}); err != io.EOF {
		return fmt.Errorf("decoding scheduler profile config: unexpected data after the configuration object")
	}
	return nil
}
