package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// ApplyFieldManager is the field manager of what Apply writes.
const ApplyFieldManager = "grove-e2e"

// ReadManifests reads the objects of a kustomization directory, rendered the way
// `kubectl apply -k` does, or of a (multi-document) YAML file.
func ReadManifests(path string) ([]*unstructured.Unstructured, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), path)
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %w", path, err)
		}
		var objs []*unstructured.Unstructured
		for _, r := range resMap.Resources() {
			m, err := r.Map()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
		return objs, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// Apply server-side applies, as admin, every object of the given kustomization directories or
// YAML files, in order (a namespace or CRD must come before what lives in it).
func (c *Cluster) Apply(ctx context.Context, paths ...string) error {
	cl, err := client.New(c.Config, client.Options{})
	if err != nil {
		return err
	}
	for _, p := range paths {
		objs, err := ReadManifests(p)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if err := cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(ApplyFieldManager), client.ForceOwnership); err != nil {
				return fmt.Errorf("applying %s %s from %s: %w", o.GetKind(), o.GetName(), p, err)
			}
		}
	}
	return nil
}
