package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// groveKinds are the kinds of Grove's CRDs that the operator's cache indexes and watches from
// its first moment.
var groveKinds = []schema.GroupVersionKind{
	corev1alpha1.SchemeGroupVersion.WithKind("PodCliqueSet"),
	corev1alpha1.SchemeGroupVersion.WithKind("PodClique"),
	corev1alpha1.SchemeGroupVersion.WithKind("PodCliqueScalingGroup"),
	corev1alpha1.SchemeGroupVersion.WithKind("ClusterTopology"),
	schedv1alpha1.SchemeGroupVersion.WithKind("PodGang"),
}

// crdWaitTimeout bounds how long the operator waits for Grove's CRDs to be served.
const crdWaitTimeout = 2 * time.Minute

// waitForKinds waits until the apiserver serves every kind, polling every interval for at
// most timeout. The Helm chart creates the CRDs in the same release as the operator's
// Deployment: the operator can start before the apiserver serves them, and registering its
// cache indexes then failed, and the pod restarted. It returns an error naming the kinds still
// missing.
func waitForKinds(ctx context.Context, mapper meta.RESTMapper, kinds []schema.GroupVersionKind, interval, timeout time.Duration, log logr.Logger) error {
	var missing []string
	logged := false
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(context.Context) (bool, error) {
		missing = missing[:0]
		for _, gvk := range kinds {
			if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				if !meta.IsNoMatchError(err) {
					return false, err
				}
				missing = append(missing, gvk.GroupKind().String())
			}
		}
		if len(missing) > 0 && !logged {
			log.Info("waiting for the apiserver to serve Grove's CRDs", "missing", missing)
			logged = true
		}
		return len(missing) == 0, nil
	})
	if wait.Interrupted(err) && len(missing) > 0 {
		return fmt.Errorf("the apiserver does not serve %s after %v: are Grove's CRDs installed? %w", strings.Join(missing, ", "), timeout, err)
	}
	return err
}
