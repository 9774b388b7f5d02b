package podclique

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/operator/startupwaiter"
)

// errParentMissing delays pod creation until every parent PodClique exists: the waiter needs
// each parent's minAvailable, and parents are created by the same PodCliqueSet reconcile (or
// their scaling group's) moments apart.
type errParentMissing struct{ parent string }

func (e errParentMissing) Error() string {
	return fmt.Sprintf("parent PodClique %s does not exist yet; pods are created once it does", e.parent)
}

// startupWaiter is the init container (and its token volume) of the pods of a PodClique with
// parents, or nil for a PodClique that starts at once.
func (r *Reconciler) startupWaiter(ctx context.Context, pclq *corev1alpha1.PodClique) (*corev1.Container, *corev1.Volume, error) {
	if len(pclq.Spec.StartsAfter) == 0 {
		return nil, nil, nil
	}
	cfg := startupwaiter.Config{Namespace: pclq.Namespace, PodCliqueSet: common.PodCliqueSetName(pclq)}
	for _, name := range pclq.Spec.StartsAfter {
		parent := &corev1alpha1.PodClique{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pclq.Namespace, Name: name}, parent); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil, errParentMissing{name}
			}
			return nil, nil, err
		}
		cfg.Parents = append(cfg.Parents, startupwaiter.Parent{PodClique: name, MinAvailable: corev1alpha1.MinAvailableOf(&parent.Spec)})
	}
	container := &corev1.Container{
		Name:  apicommon.StartupWaiterContainerName,
		Image: r.StartupWaiterImage,
		// The image's entrypoint is grove-operator.
		Args: startupwaiter.Args(cfg),
		VolumeMounts: []corev1.VolumeMount{{
			Name: apicommon.StartupWaiterTokenVolumeName, MountPath: startupwaiter.DefaultCredentialsDir, ReadOnly: true,
		}},
	}
	volume := &corev1.Volume{Name: apicommon.StartupWaiterTokenVolumeName, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: apicommon.StartupWaiterTokenSecretName(cfg.PodCliqueSet)},
	}}
	return container, volume, nil
}

// withStartupWaiter makes the waiter the pod's first init container: the pod's own init
// containers run once the parents are ready, too.
func withStartupWaiter(pod *corev1.Pod, container *corev1.Container, volume *corev1.Volume) {
	if container == nil {
		return
	}
	pod.Spec.InitContainers = append([]corev1.Container{*container.DeepCopy()}, pod.Spec.InitContainers...)
	pod.Spec.Volumes = append(slices.Clone(pod.Spec.Volumes), *volume.DeepCopy())
}
