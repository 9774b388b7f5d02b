package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// ServiceAccountTokenLifetime is how long a token of ServiceAccountConfig is valid: longer than
// any test, and long enough for a demo left running (nothing refreshes it).
const ServiceAccountTokenLifetime = 365 * 24 * time.Hour

// ServiceAccountConfig returns a client configuration that authenticates as the ServiceAccount
// namespace/name with a token from the TokenRequest API, so the apiserver authorizes its
// requests exactly as those of a pod running under that ServiceAccount.
func (c *Cluster) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ServiceAccountTokenLifetime / time.Second))},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(c.Config)
	cfg.BearerToken = tr.Status.Token
	return cfg, nil
}

// ServiceAccountKubeconfig writes a kubeconfig for ServiceAccountConfig(namespace, name) to
// <Dir>/kubeconfig-<namespace>-<name> and returns its path, for programs run as processes.
func (c *Cluster) ServiceAccountKubeconfig(ctx context.Context, namespace, name string) (string, error) {
	cfg, err := c.ServiceAccountConfig(ctx, namespace, name)
	if err != nil {
		return "", err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["grove"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["grove"] = &clientcmdapi.Context{Cluster: "grove", AuthInfo: name, Namespace: namespace}
	kc.CurrentContext = "grove"
	path := filepath.Join(c.Dir, fmt.Sprintf("kubeconfig-%s-%s", namespace, name))
	return path, clientcmd.WriteToFile(*kc, path)
}
