package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
)

// ReadCRDs reads every CustomResourceDefinition in the given files or directories (recursively).
func ReadCRDs(paths ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, root := range paths {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
			for {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := dec.Decode(crd); err != nil {
					if errors.Is(err, io.EOF) {
						break
					}
					return fmt.Errorf("%s: %w", path, err)
				}
				if crd.Kind == "CustomResourceDefinition" {
					crds = append(crds, crd)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return crds, nil
}

// InstallCRDs creates (or updates) the CRDs found in paths and waits until they are Established
// and discovery serves each of their versions: a client's REST mapper reads discovery, and
// Established alone left a test's first create now and then failing with "no matches for kind".
func (c *Cluster) InstallCRDs(ctx context.Context, paths ...string) error {
	crds, err := ReadCRDs(paths...)
	if err != nil {
		return err
	}
	client, err := apiextensionsclient.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		_, err := api.Create(ctx, crd, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			existing, gerr := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			crd.ResourceVersion = existing.ResourceVersion
			_, err = api.Update(ctx, crd, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		name := crd.Name
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := api.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			return IsEstablished(got), nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not Established: %w", name, err)
		}
	}
	disc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gv, plural := crd.Spec.Group+"/"+v.Name, crd.Spec.Names.Plural
			err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				list, err := disc.ServerResourcesForGroupVersion(gv)
				if err != nil {
					return false, nil
				}
				for _, r := range list.APIResources {
					if r.Name == plural {
						return true, nil
					}
				}
				return false, nil
			})
			if err != nil {
				return fmt.Errorf("CRD %s: discovery does not serve %s in %s: %w", crd.Name, plural, gv, err)
			}
		}
	}
	return nil
}

// IsEstablished reports whether a CRD's Established condition is True.
func IsEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
