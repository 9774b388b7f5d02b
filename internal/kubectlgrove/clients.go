package kubectlgrove

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ai-dynamo/grove/pkg/client/clientset/versioned"
)

// Clients are what the plugin reads through: Kubernetes' clientset for pods, nodes and events,
// Grove's generated clientset for its own kinds. Each command is one round of reads, so there
// are no informers or listers to start.
type Clients struct {
	Kube  kubernetes.Interface
	Grove versioned.Interface
}

// NewClients returns the clients of cfg; they share one HTTP client.
func NewClients(cfg *rest.Config) (Clients, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return Clients{}, err
	}
	kube, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return Clients{}, err
	}
	grove, err := versioned.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return Clients{}, err
	}
	return Clients{Kube: kube, Grove: grove}, nil
}

// selector is the label selector of one label.
func selector(key, value string) string {
	return labels.SelectorFromSet(labels.Set{key: value}).String()
}
