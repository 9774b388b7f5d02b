package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/backend/factories"
	"github.com/ai-dynamo/grove/internal/operator/controller"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// mutation makes a PodCliqueSet hostile in one way. Mutations guard their own preconditions
// so any combination applies without panicking.
type mutation struct {
	name  string
	apply func(*corev1alpha1.PodCliqueSet)
}

func onClique(i int, f func(*corev1alpha1.PodCliqueTemplateSpec)) func(*corev1alpha1.PodCliqueSet) {
	return func(p *corev1alpha1.PodCliqueSet) {
		if i < len(p.Spec.Template.Cliques) && p.Spec.Template.Cliques[i] != nil {
			f(p.Spec.Template.Cliques[i])
		}
	}
}

func onContainer(i int, f func(*corev1.Container)) func(*corev1alpha1.PodCliqueSet) {
	return onClique(i, func(c *corev1alpha1.PodCliqueTemplateSpec) {
		if len(c.Spec.PodSpec.Containers) > 0 {
			f(&c.Spec.PodSpec.Containers[0])
		}
	})
}

func setLabel(i int, k, v string) func(*corev1alpha1.PodCliqueSet) {
	return onClique(i, func(c *corev1alpha1.PodCliqueTemplateSpec) {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[k] = v
	})
}

func setAnnotation(i int, k, v string) func(*corev1alpha1.PodCliqueSet) {
	return onClique(i, func(c *corev1alpha1.PodCliqueTemplateSpec) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[k] = v
	})
}

func hostileMutations() []mutation {
	ms := []mutation{
		{"label key with spaces", setLabel(0, "bad key", "v")},
		{"label key with two slashes", setLabel(1, "a/b/c", "v")},
		{"64-character label value", setLabel(2, "team", strings.Repeat("v", 64))},
		{"label value with spaces", setLabel(0, "team", "a b")},
		{"harmless grove.io label", setLabel(1, "grove.io/team", "inference")},
		{"harmless label", setLabel(2, "team", "inference")},
		{"app.kubernetes.io/part-of label", setLabel(0, apicommon.LabelPartOfKey, "someone-else")},
		{"annotation key with spaces", setAnnotation(1, "bad key", "v")},
		{"300 KiB annotation", setAnnotation(0, "blob", strings.Repeat("a", 300<<10))},
		{"harmless annotation", setAnnotation(2, "note", strings.Repeat("a", 1000))},
		{"invalid pod deletion cost", setAnnotation(0, "controller.kubernetes.io/pod-deletion-cost", "lots")},
		{"no containers", onClique(1, func(c *corev1alpha1.PodCliqueTemplateSpec) { c.Spec.PodSpec.Containers = nil })},
		{"container name with capitals", onContainer(0, func(c *corev1.Container) { c.Name = "Main" })},
		{"container name too long", onContainer(2, func(c *corev1.Container) { c.Name = strings.Repeat("c", 64) })},
		{"empty container name", onContainer(1, func(c *corev1.Container) { c.Name = "" })},
		{"duplicate container names", onClique(2, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.PodSpec.Containers = append(c.Spec.PodSpec.Containers, c.Spec.PodSpec.Containers...)
		})},
		{"no image", onContainer(0, func(c *corev1.Container) { c.Image = "" })},
		{"image with spaces", onContainer(1, func(c *corev1.Container) { c.Image = "busy box" })},
		{"env var with an invalid name", onContainer(0, func(c *corev1.Container) { c.Env = []corev1.EnvVar{{Name: "", Value: "x"}} })},
		{"env var overriding a Grove variable", onContainer(2, func(c *corev1.Container) {
			c.Env = []corev1.EnvVar{{Name: apicommon.EnvPodCliqueSetName, Value: "mine"}}
		})},
		{"port out of range", onContainer(1, func(c *corev1.Container) { c.Ports = []corev1.ContainerPort{{ContainerPort: 70000}} })},
		{"duplicate port names", onContainer(0, func(c *corev1.Container) {
			c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 80}, {Name: "http", ContainerPort: 81}}
		})},
		{"negative cpu request", onContainer(2, func(c *corev1.Container) {
			c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}
		})},
		{"limit below request", onContainer(0, func(c *corev1.Container) {
			c.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
		})},
		{"sane resources", onContainer(1, func(c *corev1.Container) {
			c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}
		})},
		{"mount of a missing volume", onContainer(0, func(c *corev1.Container) {
			c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		})},
		{"volume with an invalid name", onClique(1, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.PodSpec.Volumes = []corev1.Volume{{Name: "Data_1", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		})},
		{"volume without a source", onClique(2, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.PodSpec.Volumes = []corev1.Volume{{Name: "data"}}
		})},
		{"emptyDir volume and mount", onClique(0, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.PodSpec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			if len(c.Spec.PodSpec.Containers) > 0 {
				c.Spec.PodSpec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
			}
		})},
		{"reserved init container name", onClique(1, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.PodSpec.InitContainers = []corev1.Container{{Name: apicommon.StartupWaiterContainerName, Image: "busybox"}}
		})},
		{"reserved volume name", onClique(0, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.PodSpec.Volumes = []corev1.Volume{{Name: apicommon.StartupWaiterTokenVolumeName,
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		})},
		{"init container without image", onClique(2, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.PodSpec.InitContainers = []corev1.Container{{Name: "init"}}
		})},
		{"restartPolicy OnFailure", onClique(0, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.PodSpec.RestartPolicy = corev1.RestartPolicyOnFailure
		})},
		{"restartPolicy Never", onClique(1, func(c *corev1alpha1.PodCliqueTemplateSpec) { c.Spec.PodSpec.RestartPolicy = corev1.RestartPolicyNever })},
		{"unknown dnsPolicy", onClique(2, func(c *corev1alpha1.PodCliqueTemplateSpec) { c.Spec.PodSpec.DNSPolicy = "Sometimes" })},
		{"unknown imagePullPolicy", onContainer(1, func(c *corev1.Container) { c.ImagePullPolicy = "Maybe" })},
		{"negative runAsUser", onClique(0, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.PodSpec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](-1)}
		})},
		{"activeDeadlineSeconds 0", onClique(1, func(c *corev1alpha1.PodCliqueTemplateSpec) { c.Spec.PodSpec.ActiveDeadlineSeconds = ptr.To[int64](0) })},
		{"negative grace period", onClique(2, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.PodSpec.TerminationGracePeriodSeconds = ptr.To[int64](-5)
		})},
		{"nodeName", onClique(0, func(c *corev1alpha1.PodCliqueTemplateSpec) { c.Spec.PodSpec.NodeName = "node-1" })},
		{"hostname and subdomain (the operator sets its own)", onClique(1, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.PodSpec.Hostname, c.Spec.PodSpec.Subdomain = "Not_A_Label", "also bad"
		})},
		{"ephemeral container", onClique(2, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.PodSpec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg", Image: "busybox"}}}
		})},
		{"invalid nodeSelector key", onClique(0, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.PodSpec.NodeSelector = map[string]string{"a b": "c"}
		})},
		{"toleration with an invalid operator", onClique(1, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.PodSpec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: "Sometimes"}}
		})},
		{"sane toleration", onClique(2, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.PodSpec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
		})},
		{"clique replicas 0", onClique(0, func(c *corev1alpha1.PodCliqueTemplateSpec) { c.Spec.Replicas = 0 })},
		{"clique replicas negative", onClique(1, func(c *corev1alpha1.PodCliqueTemplateSpec) { c.Spec.Replicas = -2 })},
		{"clique replicas above the bound", onClique(2, func(c *corev1alpha1.PodCliqueTemplateSpec) { c.Spec.Replicas = apicommon.MaxReplicas + 1 })},
		{"two pods per clique", onClique(0, func(c *corev1alpha1.PodCliqueTemplateSpec) { c.Spec.Replicas = 2 })},
		{"minAvailable 0", onClique(2, func(c *corev1alpha1.PodCliqueTemplateSpec) { c.Spec.MinAvailable = ptr.To[int32](0) })},
		{"autoscaler maxReplicas above the bound", onClique(0, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.ScaleConfig = &corev1alpha1.AutoScalingConfig{MaxReplicas: apicommon.MaxReplicas + 1}
		})},
		{"PodCliqueSet replicas negative", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Replicas = -1 }},
		{"PodCliqueSet replicas above the bound", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Replicas = apicommon.MaxReplicas + 1 }},
		{"PodCliqueSet replicas 0", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Replicas = 0 }},
		{"scaling group replicas 0", func(p *corev1alpha1.PodCliqueSet) {
			if len(p.Spec.Template.PodCliqueScalingGroupConfigs) > 0 {
				p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](0)
			}
		}},
		{"scaling group annotation key with spaces", func(p *corev1alpha1.PodCliqueSet) {
			if len(p.Spec.Template.PodCliqueScalingGroupConfigs) > 0 {
				p.Spec.Template.PodCliqueScalingGroupConfigs[0].Annotations = map[string]string{"a b": "c"}
			}
		}},
		{"no scaling groups", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.PodCliqueScalingGroupConfigs = nil }},
		{"terminationDelay 0", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.TerminationDelay = &metav1.Duration{} }},
		{"terminationDelay negative", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TerminationDelay = &metav1.Duration{Duration: -time.Minute}
		}},
		{"priorityClassName not a DNS name", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.PriorityClassName = "Not Valid" }},
		{"clique name with capitals", onClique(2, func(c *corev1alpha1.PodCliqueTemplateSpec) { c.Name = "Decode" })},
		{"clique name too long for its pods", onClique(0, func(c *corev1alpha1.PodCliqueTemplateSpec) { c.Name = strings.Repeat("r", 50) })},
		{"PodCliqueSet name too long", func(p *corev1alpha1.PodCliqueSet) { p.Name = "h" + strings.Repeat("x", 45) }},
	}
	// What only the apiserver decides (issue 42, "admitted means runnable"): each was admitted
	// and then had no pods, or (privileged) refused although the cluster allows it.
	ms = append(ms,
		mutation{"Dynamo-shaped RDMA worker: privileged, IPC_LOCK, hostIPC, hostNetwork", onClique(1, rdmaWorker)},
		mutation{"priority set in the pod spec", onClique(0, func(c *corev1alpha1.PodCliqueTemplateSpec) { c.Spec.PodSpec.Priority = ptr.To[int32](5) })},
		mutation{"preemptionPolicy set in the pod spec", onClique(2, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.PodSpec.PreemptionPolicy = ptr.To(corev1.PreemptNever)
		})},
		mutation{"overhead without a RuntimeClass", onClique(1, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.PodSpec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}
		})},
		mutation{"missing RuntimeClass", onClique(0, func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.Spec.PodSpec.RuntimeClassName = ptr.To("no-such-runtime")
		})},
		mutation{"missing PriorityClass on a clique", onClique(2, func(c *corev1alpha1.PodCliqueTemplateSpec) { c.Spec.PodSpec.PriorityClassName = "no-such-priority" })},
		mutation{"missing PriorityClass on the template", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.PriorityClassName = "no-such-priority" }},
		mutation{"LimitRange violation", onContainer(1, func(c *corev1.Container) {
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(hostileLimitRangeTooMuchCPU)}
		})},
		mutation{"app.kubernetes.io/managed-by label", setLabel(2, apicommon.LabelManagedByKey, "helm")},
		mutation{"resourceClaims entry named like Grove's shared claim", func(p *corev1alpha1.PodCliqueSet) {
			t := &p.Spec.Template
			t.ResourceClaimTemplates = []corev1alpha1.ResourceClaimTemplateConfig{{Name: "gpu", TemplateSpec: hostileClaimTemplate()}}
			t.ResourceSharing = []corev1alpha1.PCSResourceSharingSpec{{ResourceSharingSpec: corev1alpha1.ResourceSharingSpec{
				Name: "gpu", Scope: corev1alpha1.ResourceSharingScopeAllReplicas}}}
			if len(t.Cliques) > 0 && t.Cliques[0] != nil {
				t.Cliques[0].Spec.PodSpec.ResourceClaims = []corev1.PodResourceClaim{{Name: p.Name + "-0-gpu", ResourceClaimTemplateName: ptr.To("mine")}}
			}
		}},
		mutation{"PodCliqueSet annotations that leave no room on its PodGangs", func(p *corev1alpha1.PodCliqueSet) {
			p.Annotations = map[string]string{"blob": strings.Repeat("a", apicommon.TotalAnnotationSizeLimit-2<<10)}
		}},
	)
	for _, k := range apicommon.ReservedLabelKeys {
		ms = append(ms, mutation{"reserved label " + k, setLabel(len(ms)%3, k, "x")})
	}
	return ms
}

// hostileVerdicts pins the outcome of single mutations whose outcome matters, not only that
// they are refused with a path or run: "admit" (it must be accepted and run) or the field path
// the refusal must name.
var hostileVerdicts = map[string]string{
	"Dynamo-shaped RDMA worker: privileged, IPC_LOCK, hostIPC, hostNetwork": "admit",
	"priority set in the pod spec":                                          "spec.template.cliques[0].spec.podSpec.priority",
	"preemptionPolicy set in the pod spec":                                  "spec.template.cliques[2].spec.podSpec.preemptionPolicy",
	"overhead without a RuntimeClass":                                       "spec.template.cliques[1].spec.podSpec.overhead",
	"missing RuntimeClass":                                                  "spec.template.cliques[0].spec.podSpec.runtimeClassName",
	"missing PriorityClass on a clique":                                     "spec.template.cliques[2].spec.podSpec.priorityClassName",
	"missing PriorityClass on the template":                                 "spec.template.priorityClassName",
	"LimitRange violation":                                                  "spec.template.cliques[1].spec.podSpec.containers",
	"app.kubernetes.io/part-of label":                                       "spec.template.cliques[0].labels[app.kubernetes.io/part-of]",
	"app.kubernetes.io/managed-by label":                                    "spec.template.cliques[2].labels[app.kubernetes.io/managed-by]",
	"resourceClaims entry named like Grove's shared claim":                  "spec.template.cliques[0].spec.podSpec.resourceClaims[0].name",
	"PodCliqueSet annotations that leave no room on its PodGangs":           "metadata.annotations",
}

// rdmaWorker is a clique shaped like NVIDIA Dynamo's multi-node RDMA/InfiniBand workers.
func rdmaWorker(c *corev1alpha1.PodCliqueTemplateSpec) {
	ps := &c.Spec.PodSpec
	ps.HostIPC, ps.HostNetwork = true, true
	ps.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	if len(ps.Containers) > 0 {
		ps.Containers[0].SecurityContext = &corev1.SecurityContext{
			Privileged:   ptr.To(true),
			Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK", "SYS_RESOURCE"}},
		}
		ps.Containers[0].Resources.Limits = corev1.ResourceList{"rdma/ib": resource.MustParse("1")}
	}
}

// hostileLimitRangeTooMuchCPU is a CPU limit above the hostile namespace's LimitRange.
const hostileLimitRangeTooMuchCPU = "200"

func hostileClaimTemplate() resourcev1.ResourceClaimTemplateSpec {
	return resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}}}}
}

// hostileCases are every mutation alone plus seeded random combinations of two or three.
func hostileCases() []mutation {
	ms := hostileMutations()
	cases := append([]mutation(nil), ms...)
	r := rand.New(rand.NewSource(24))
	for len(cases) < 2*len(ms) {
		picked := r.Perm(len(ms))[:2+r.Intn(2)]
		var names []string
		var applies []func(*corev1alpha1.PodCliqueSet)
		for _, i := range picked {
			names = append(names, ms[i].name)
			applies = append(applies, ms[i].apply)
		}
		cases = append(cases, mutation{strings.Join(names, " + "), func(p *corev1alpha1.PodCliqueSet) {
			for _, a := range applies {
				a(p)
			}
		}})
	}
	return cases
}

// startOperatorIn runs grove-operator's controllers against the shared control plane,
// watching one namespace, until the test ends.
func startOperatorIn(t *testing.T, ns string) {
	t.Helper()
	cfg := &configv1alpha1.OperatorConfiguration{
		Scheduler: configv1alpha1.SchedulerConfiguration{
			Profiles:           []configv1alpha1.SchedulerProfile{{Name: configv1alpha1.SchedulerNameGrove}, {Name: configv1alpha1.SchedulerNameKube}},
			DefaultProfileName: configv1alpha1.SchedulerNameGrove,
		},
		TopologyAwareScheduling: configv1alpha1.TopologyAwareSchedulingConfiguration{Enabled: true},
	}
	configv1alpha1.SetDefaults_OperatorConfiguration(cfg)
	scheme := newScheme()
	require.NoError(t, schedv1alpha1.AddToScheme(scheme))
	mgr, err := ctrl.NewManager(cluster.Shared.Config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          ctrlwebhook.NewServer(ctrlwebhook.Options{Port: -1}),
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}, ByObject: controller.CacheByObject()},
		Controller:             ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	registry, err := backend.NewRegistry(cfg.Scheduler, factories.All())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, controller.SetupWithManager(ctx, mgr, cfg, registry, controller.Options{SkipNameValidation: true}))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err, "operator manager: %v", err)
		case <-time.After(30 * time.Second):
			t.Error("operator manager did not stop")
		}
	})
}

// runnable reports whether every PodClique the PodCliqueSet's spec calls for exists and has
// all its pods created; why says what is missing.
func runnable(ctx context.Context, c client.Client, pcs *corev1alpha1.PodCliqueSet) (ok bool, why string, err error) {
	got := &corev1alpha1.PodCliqueSet{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pcs), got); err != nil {
		return false, "", err
	}
	t := &got.Spec.Template
	want := map[string]int32{}
	for r := range int(got.Spec.Replicas) {
		for _, cl := range t.Cliques {
			if g := t.ScalingGroupOf(cl.Name); g == nil {
				want[apicommon.StandalonePodCliqueName(got.Name, r, cl.Name)] = cl.Spec.Replicas
			} else {
				pcsg := apicommon.PodCliqueScalingGroupName(got.Name, r, g.Name)
				for j := range int(corev1alpha1.ScalingGroupReplicas(g)) {
					want[apicommon.ScalingGroupPodCliqueName(pcsg, j, cl.Name)] = cl.Spec.Replicas
				}
			}
		}
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(got.Namespace), client.MatchingLabels{apicommon.LabelPartOfKey: got.Name}); err != nil {
		return false, "", err
	}
	perClique := map[string]int32{}
	for _, p := range pods.Items {
		perClique[p.Labels[apicommon.LabelPodClique]]++
	}
	var missing []string
	for name, n := range want {
		pclq := &corev1alpha1.PodClique{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: got.Namespace, Name: name}, pclq); err != nil {
			if apierrors.IsNotFound(err) {
				missing = append(missing, fmt.Sprintf("PodClique %s not created (PodCliqueSet lastErrors: %v)", name, got.Status.LastErrors))
				continue
			}
			return false, "", err
		}
		if perClique[name] < n {
			missing = append(missing, fmt.Sprintf("PodClique %s has %d of %d pods (lastErrors: %v)", name, perClique[name], n, pclq.Status.LastErrors))
		}
	}
	sort.Strings(missing)
	return len(missing) == 0, strings.Join(missing, "; "), nil
}

// TestHostilePodCliqueSetsAreRejectedOrRun drives well over 100 hostile PodCliqueSets through
// the real webhooks and the real operator: each is either refused with a 422 whose every cause
// names a field, or accepted and actually runnable (its PodCliques and all their pods are
// created). Accepted-but-stuck is the failure this guards against.
func TestHostilePodCliqueSetsAreRejectedOrRun(t *testing.T) {
	e := sharedEnv(t)
	ns := cluster.Shared.TestNamespace(t)
	ctx := context.Background()
	// This control plane runs no kube-controller-manager, which would make the namespace's
	// default ServiceAccount that pods are admitted against.
	require.NoError(t, e.client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}))
	require.NoError(t, e.client.Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "limits"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")}}}}}))
	startOperatorIn(t, ns)
	cases := hostileCases()
	require.GreaterOrEqual(t, len(cases), 100)

	var accepted []*corev1alpha1.PodCliqueSet
	acceptedName := map[string]string{}
	rejected := 0
	for i, tc := range cases {
		pcs := newPCS(ns, fmt.Sprintf("h%d", i))
		// One replica per scaling group keeps the number of pods small.
		pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](1)
		tc.apply(pcs)
		if strings.HasPrefix(pcs.Name, "hx") {
			pcs.Name = fmt.Sprintf("h%d", i) + pcs.Name[2:]
		}
		err := e.client.Create(ctx, pcs)
		switch want := hostileVerdicts[tc.name]; want {
		case "":
		case "admit":
			require.NoError(t, err, "case %q must be admitted", tc.name)
		default:
			requireInvalid(t, err, want)
		}
		if err == nil {
			accepted = append(accepted, pcs)
			acceptedName[pcs.Name] = tc.name
			continue
		}
		rejected++
		require.True(t, apierrors.IsInvalid(err), "case %q: want 422 Invalid, got %v", tc.name, err)
		var status apierrors.APIStatus
		require.True(t, errors.As(err, &status))
		require.NotNil(t, status.Status().Details, "case %q: %v", tc.name, err)
		require.NotEmpty(t, status.Status().Details.Causes, "case %q: %v", tc.name, err)
		for _, c := range status.Status().Details.Causes {
			// The apiserver adds this note, without a field, when the schema refused the object
			// before its CEL rules ran; the schema's own causes name the fields.
			if c.Field == "<nil>" && strings.Contains(c.Message, "some validation rules were not checked") {
				continue
			}
			// The apiserver checks the scale subresource's replicas path as ".spec.replicas".
			f := strings.TrimPrefix(c.Field, ".")
			require.True(t, strings.HasPrefix(f, "spec.") || strings.HasPrefix(f, "metadata."),
				"case %q: cause without a field path: %+v", tc.name, c)
		}
	}
	t.Logf("%d hostile PodCliqueSets: %d refused with field paths, %d accepted", len(cases), rejected, len(accepted))
	require.NotEmpty(t, accepted, "some cases are harmless and must be accepted")

	pending := accepted
	var why map[string]string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		why = map[string]string{}
		var still []*corev1alpha1.PodCliqueSet
		for _, pcs := range pending {
			ok, reason, err := runnable(ctx, e.client, pcs)
			if err != nil {
				return false, err
			}
			if !ok {
				still = append(still, pcs)
				why[pcs.Name] = reason
			}
		}
		pending = still
		return len(pending) == 0, nil
	})
	for _, pcs := range pending {
		t.Errorf("accepted but stuck: %s (%s): %s", pcs.Name, acceptedName[pcs.Name], why[pcs.Name])
	}
	if len(pending) == 0 || !wait.Interrupted(err) {
		require.NoError(t, err)
	}
}
