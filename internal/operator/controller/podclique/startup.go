package podclique

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
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

// errServiceAccountNotGroves delays the pods of a clique that starts after others and names no
// ServiceAccount until the PodCliqueSet's ServiceAccount exists as Grove created it: they run as
// it, and a ServiceAccount of that name Grove did not create (another team's, or the default
// one of a PodCliqueSet named "default") must never be used; the PodCliqueSet reports that
// conflict.
type errServiceAccountNotGroves struct{ name string }

func (e errServiceAccountNotGroves) Error() string {
	return fmt.Sprintf("ServiceAccount %s is not (yet) the one Grove creates for the PodCliqueSet; the startup waiter's pods are created once it is", e.name)
}

// waiterTokenExpirationSeconds bounds the life of the waiter's token. The kubelet renews a
// projected token at 80% of its life, and the waiter re-reads the file, so a waiter that waits
// for hours never holds an expired one; a copy leaked from the pod is useless after an hour and
// as soon as the pod is gone (the token is bound to it).
const waiterTokenExpirationSeconds = 3600

// startupWaiter is the init container (and its token volume) of the pods of a PodClique with
// parents, or nil for a PodClique that starts at once. It also says which ServiceAccount those
// pods run as: the clique's own, or else the PodCliqueSet's (serviceAccountName; "" keeps the
// clique's).
func (r *Reconciler) startupWaiter(ctx context.Context, pcs *corev1alpha1.PodCliqueSet, pclq *corev1alpha1.PodClique) (*corev1.Container, *corev1.Volume, string, error) {
	if len(pclq.Spec.StartsAfter) == 0 {
		return nil, nil, "", nil
	}
	cfg := startupwaiter.Config{Namespace: pclq.Namespace, PodCliqueSet: common.PodCliqueSetName(pclq)}
	for _, name := range pclq.Spec.StartsAfter {
		parent := &corev1alpha1.PodClique{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pclq.Namespace, Name: name}, parent); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil, "", errParentMissing{name}
			}
			return nil, nil, "", err
		}
		cfg.Parents = append(cfg.Parents, startupwaiter.Parent{PodClique: name, MinAvailable: corev1alpha1.MinAvailableOf(&parent.Spec)})
	}
	serviceAccount, err := r.waiterServiceAccount(ctx, pcs, pclq)
	if err != nil {
		return nil, nil, "", err
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
	return container, waiterTokenVolume(), serviceAccount, nil
}

// waiterServiceAccount is the ServiceAccount the pods run as when the clique names none: the
// PodCliqueSet's, which Grove binds to a Role that may only read pods. A clique that names its
// own keeps it (Grove grants it nothing: it is the user's to grant).
func (r *Reconciler) waiterServiceAccount(ctx context.Context, pcs *corev1alpha1.PodCliqueSet, pclq *corev1alpha1.PodClique) (string, error) {
	if pclq.Spec.PodSpec.ServiceAccountName != "" || pclq.Spec.PodSpec.DeprecatedServiceAccount != "" {
		return "", nil
	}
	name := apicommon.PodServiceAccountName(pcs.Name)
	sa := &corev1.ServiceAccount{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pcs.Namespace, Name: name}, sa); err != nil {
		if apierrors.IsNotFound(err) {
			return "", errServiceAccountNotGroves{name}
		}
		return "", err
	}
	own := common.Child{Owner: pcs, PodCliqueSet: pcs.Name, Component: apicommon.ComponentPodServiceAccount}
	if !own.Owns(sa) {
		return "", errServiceAccountNotGroves{name}
	}
	return name, nil
}

// waiterTokenVolume holds what the waiter authenticates with, laid out as a pod's own
// ServiceAccount credentials: a token the kubelet requests for the pod (TokenRequest API:
// bound to the pod, expiring, renewed), the cluster's CA and the namespace. No Secret holds a
// token, so nothing long-lived exists for anyone to mount or read.
func waiterTokenVolume() *corev1.Volume {
	return &corev1.Volume{Name: apicommon.StartupWaiterTokenVolumeName, VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Path: corev1.ServiceAccountTokenKey, ExpirationSeconds: ptr.To[int64](waiterTokenExpirationSeconds)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: kubeRootCAConfigMap},
				Items: []corev1.KeyToPath{{Key: corev1.ServiceAccountRootCAKey, Path: corev1.ServiceAccountRootCAKey}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path: corev1.ServiceAccountNamespaceKey, FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}},
	}}
}

// kubeRootCAConfigMap is the ConfigMap kube-controller-manager publishes the cluster's CA in, in
// every namespace (what the kubelet's own ServiceAccount volumes project).
const kubeRootCAConfigMap = "kube-root-ca.crt"

// withStartupWaiter makes the waiter the pod's first init container: the pod's own init
// containers run once the parents are ready, too.
func withStartupWaiter(pod *corev1.Pod, container *corev1.Container, volume *corev1.Volume, serviceAccount string) {
	if container == nil {
		return
	}
	if serviceAccount != "" {
		pod.Spec.ServiceAccountName = serviceAccount
	}
	pod.Spec.InitContainers = append([]corev1.Container{*container.DeepCopy()}, pod.Spec.InitContainers...)
	pod.Spec.Volumes = append(slices.Clone(pod.Spec.Volumes), *volume.DeepCopy())
}
