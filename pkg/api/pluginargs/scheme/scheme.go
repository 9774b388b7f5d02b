// Package scheme makes kube-scheduler's config scheme decode grove-scheduler's plugin args.
// Import it (blank) in every program or test that decodes a KubeSchedulerConfiguration.
package scheme

import (
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"

	"github.com/ai-dynamo/grove/pkg/api/pluginargs"
	pluginargsv1 "github.com/ai-dynamo/grove/pkg/api/pluginargs/v1"
)

// Scheme is kube-scheduler's config scheme, extended with Grove's plugin args.
var Scheme = kubeschedulerscheme.Scheme

func init() {
	// kube-scheduler's scheme was built in its own init, before ours registered: add ours.
	if err := pluginargs.AddToScheme(Scheme); err != nil {
		panic(err)
	}
	if err := pluginargsv1.AddToScheme(Scheme); err != nil {
		panic(err)
	}
}
