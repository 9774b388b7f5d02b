package common

// Admission webhooks of grove-operator. config/webhook/manifests.yaml declares the
// configurations under these names; in certProvisionMode auto the operator injects its CA
// bundle into exactly these objects.
const (
	// MutatingWebhookConfigurationName holds the PodCliqueSet defaulting webhook.
	MutatingWebhookConfigurationName = "grove-defaulting-webhook"
	// ValidatingWebhookConfigurationName holds the PodCliqueSet and ClusterTopology validating webhooks.
	ValidatingWebhookConfigurationName = "grove-validating-webhook"

	// Names of the individual webhooks inside those configurations.
	WebhookNamePodCliqueSetDefaulting    = "pcs.defaulting.webhooks.grove.io"
	WebhookNamePodCliqueSetValidating    = "pcs.validating.webhooks.grove.io"
	WebhookNameClusterTopologyValidating = "clustertopology.validating.webhooks.grove.io"
	// WebhookNameClusterTopologyBindingValidating admits upstream's ClusterTopologyBindings.
	WebhookNameClusterTopologyBindingValidating = "clustertopologybinding.validating.webhooks.grove.io"
	// WebhookNameClusterTopologyDeletion only warns about deletions (failurePolicy Ignore).
	WebhookNameClusterTopologyDeletion = "clustertopology-delete.validating.webhooks.grove.io"
)

// Keys of the Secret that holds the webhook certificates in certProvisionMode auto. tls.crt
// and tls.key are the serving pair (the file names controller-runtime's webhook server reads);
// ca.crt is the CA bundle given to the apiserver (the signing CA first, then a previous CA that
// is still valid, so a CA rotation never breaks calls in flight); ca.key signs serving certs.
const (
	WebhookSecretKeyCert     = "tls.crt"
	WebhookSecretKeyKey      = "tls.key"
	WebhookSecretKeyCABundle = "ca.crt"
	WebhookSecretKeyCAKey    = "ca.key"
)
