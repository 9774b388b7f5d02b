package v1alpha1

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// Decode strictly decodes an OperatorConfiguration (unknown fields are errors) and applies defaults.
func Decode(data []byte) (*OperatorConfiguration, error) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		return nil, err
	}
	codecs := serializer.NewCodecFactory(scheme, serializer.EnableStrict)
	cfg := &OperatorConfiguration{}
	if err := runtime.DecodeInto(codecs.UniversalDecoder(SchemeGroupVersion), data, cfg); err != nil {
		return nil, fmt.Errorf("decoding operator configuration: %w", err)
	}
	scheme.Default(cfg)
	return cfg, nil
}

// Load reads and decodes an OperatorConfiguration file.
func Load(path string) (*OperatorConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading operator configuration: %w", err)
	}
	return Decode(data)
}
