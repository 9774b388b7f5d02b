package controller_test

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/startupwaiter"
)

// waiterOf returns the pod's startup-waiter init container, or nil.
func waiterOf(p *corev1.Pod) *corev1.Container {
	for i := range p.Spec.InitContainers {
		if p.Spec.InitContainers[i].Name == apicommon.StartupWaiterContainerName {
			return &p.Spec.InitContainers[i]
		}
	}
	return nil
}

// parentArgs are the --parent arguments of the pod's waiter, or nil without one.
func parentArgs(p *corev1.Pod) []string {
	w := waiterOf(p)
	if w == nil {
		return nil
	}
	var out []string
	for _, a := range w.Args {
		if v, ok := strings.CutPrefix(a, "--parent="); ok {
			out = append(out, v)
		}
	}
	return out
}

// TestStartupOrderingInitContainers: with cliqueStartupType InOrder, each clique waits for the
// one before it. A base-gang member's parent that is a scaling-group member means the group's
// base-gang replicas; a scaled replica only waits inside itself. Dependent pods get the waiter
// as their first init container with a projected, pod-bound token mounted into it alone;
// cliques without parents, and PodCliqueSets without ordering, get neither.
func TestStartupOrderingInitContainers(t *testing.T) {
	e := newEnv(t, withConfig(func(cfg *configv1alpha1.OperatorConfiguration) {
		cfg.StartupWaiter.Image = "registry.example/grove-operator:v1"
	}))
	pcs := disaggregated(e.ns, "ordered", 1)
	pcs.Spec.Template.StartupType = ptr.To(corev1alpha1.CliqueStartupTypeInOrder)
	userInit := corev1.Container{Name: "user-init", Image: "busybox"}
	pcs.Spec.Template.Clique("decode").Spec.PodSpec.InitContainers = []corev1.Container{userInit}
	e.create(pcs)
	unordered := disaggregated(e.ns, "unordered", 1)
	e.create(unordered)

	want := map[string][]string{
		"ordered-0-router":            nil,
		"ordered-0-workers-0-prefill": {"ordered-0-router:1"},
		"ordered-0-workers-0-decode":  {"ordered-0-workers-0-prefill:2"},
		// The scaled replica starts on its own: the router is outside its gang.
		"ordered-0-workers-1-prefill": nil,
		"ordered-0-workers-1-decode":  {"ordered-0-workers-1-prefill:2"},
	}
	e.eventually(func(c *assert.CollectT) {
		for pclq, parents := range want {
			pc := &corev1alpha1.PodClique{}
			require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: pclq}, pc))
			var names []string
			for _, p := range parents {
				names = append(names, strings.Split(p, ":")[0])
			}
			assert.Equal(c, names, pc.Spec.StartsAfter, "%s startsAfter", pclq)
			pods := e.pods(pclq)
			assert.NotEmpty(c, pods, pclq)
			for _, p := range pods {
				assert.Equal(c, parents, parentArgs(&p), "%s waits for", p.Name)
			}
		}
		for _, p := range e.pods("") {
			if p.Labels[apicommon.LabelPartOfKey] == "unordered" {
				assert.Nil(c, waiterOf(&p), "%s has no ordering", p.Name)
			}
		}
	})

	decode := e.pods("ordered-0-workers-0-decode")[0]
	require.Len(t, decode.Spec.InitContainers, 2)
	assert.Equal(t, "user-init", decode.Spec.InitContainers[1].Name, "the pod's own init containers run after the waiter")
	w := decode.Spec.InitContainers[0]
	assert.Equal(t, "registry.example/grove-operator:v1", w.Image, "from startupWaiter.image")
	assert.Equal(t, []string{startupwaiter.CommandName, "--namespace=" + e.ns, "--podcliqueset=ordered", "--parent=ordered-0-workers-0-prefill:2"}, w.Args)
	assert.Equal(t, []corev1.VolumeMount{{Name: apicommon.StartupWaiterTokenVolumeName, MountPath: startupwaiter.DefaultCredentialsDir, ReadOnly: true}}, w.VolumeMounts)
	for _, c := range decode.Spec.Containers {
		for _, m := range c.VolumeMounts {
			assert.NotEqual(t, apicommon.StartupWaiterTokenVolumeName, m.Name, "only the waiter sees the token")
		}
	}
	var tokenVolume *corev1.Volume
	for i := range decode.Spec.Volumes {
		if decode.Spec.Volumes[i].Name == apicommon.StartupWaiterTokenVolumeName {
			tokenVolume = &decode.Spec.Volumes[i]
		}
	}
	require.NotNil(t, tokenVolume)
	require.Nil(t, tokenVolume.Secret, "no Secret holds a token")
	require.NotNil(t, tokenVolume.Projected)
	var token *corev1.ServiceAccountTokenProjection
	for _, src := range tokenVolume.Projected.Sources {
		if src.ServiceAccountToken != nil {
			token = src.ServiceAccountToken
		}
	}
	require.NotNil(t, token, "a token the kubelet requests for the pod")
	assert.Equal(t, corev1.ServiceAccountTokenKey, token.Path)
	assert.LessOrEqual(t, *token.ExpirationSeconds, int64(3600), "a bounded lifetime")
	assert.Equal(t, apicommon.PodServiceAccountName("ordered"), decode.Spec.ServiceAccountName,
		"a clique that names no ServiceAccount runs as the PodCliqueSet's, the one the waiter's Role is bound to")
	assert.Empty(t, e.names(&corev1.SecretList{}), "no token Secret, for either PodCliqueSet")
}

// TestStartupWaiterProcess runs `grove-operator wait-for-cliques` as a real process with a
// token of the PodCliqueSet's ServiceAccount (from the TokenRequest API; the operator's Role is
// all it may use), with exactly the arguments the operator gave a dependent pod. It blocks
// while the parent has fewer than minAvailable Ready pods, rides out an apiserver restart, and
// exits 0 promptly once the parent's pods are marked Ready.
func TestStartupWaiterProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("needs its own control plane (it restarts the apiserver) and builds grove-operator")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "grove-operator")
	built := make(chan error, 1)
	go func() { built <- buildOperator(bin) }()
	cl := cluster.StartForTest(t, cluster.Options{})
	e := newNamespaceOn(t, cl)
	e.startOperator()

	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "wait"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			StartupType: ptr.To(corev1alpha1.CliqueStartupTypeExplicit),
			Cliques:     []*corev1alpha1.PodCliqueTemplateSpec{cliqueTemplate("leader", 3), cliqueTemplate("worker", 1)}}}}
	pcs.Spec.Template.Clique("leader").Spec.MinAvailable = ptr.To[int32](2)
	pcs.Spec.Template.Clique("worker").Spec.StartsAfter = []string{"leader"}
	e.create(pcs)
	var args []string
	e.eventually(func(c *assert.CollectT) {
		workers := e.pods("wait-0-worker")
		if assert.Len(c, workers, 1) && assert.NotNil(c, waiterOf(&workers[0])) {
			args = waiterOf(&workers[0]).Args
		}
		assert.Len(c, e.pods("wait-0-leader"), 3)
		assert.Contains(c, e.names(&corev1.ServiceAccountList{}), "wait")
	})
	assert.Contains(t, args, "--parent=wait-0-leader:2")

	// The credentials a pod would find in its token volume: a token of the PodCliqueSet's
	// ServiceAccount and the cluster CA.
	cs, err := kubernetes.NewForConfig(cl.Config)
	require.NoError(t, err)
	token, err := cs.CoreV1().ServiceAccounts(e.ns).CreateToken(e.ctx, apicommon.PodServiceAccountName("wait"),
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	creds := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(creds, corev1.ServiceAccountTokenKey), []byte(token.Status.Token), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(creds, corev1.ServiceAccountRootCAKey), cl.Config.CAData, 0o600))
	server, err := url.Parse(cl.APIServerURL)
	require.NoError(t, err)

	require.NoError(t, <-built)
	waiter, err := cl.StartProcess("waiter", bin, append(args, "--credentials-dir="+creds),
		[]string{"KUBERNETES_SERVICE_HOST=" + server.Hostname(), "KUBERNETES_SERVICE_PORT=" + server.Port()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = waiter.Stop(time.Second) })
	logged := func(s string) func() bool {
		return func() bool {
			data, _ := os.ReadFile(waiter.LogPath())
			return strings.Contains(string(data), s)
		}
	}
	running := func(msg string) {
		t.Helper()
		exited, err := waiter.Exited()
		require.False(t, exited, "%s: the waiter exited early (%v):\n%s", msg, err, readFile(waiter.LogPath()))
	}

	leaders := e.pods("wait-0-leader")
	require.Eventually(t, logged(`wait-0-leader=0/2`), waitFor, tick, "the waiter lists the parent's pods")
	running("no parent pod is ready")
	e.markReady(&leaders[0])
	require.Eventually(t, logged(`wait-0-leader=1/2`), waitFor, tick, "the waiter sees the first ready pod")
	running("one of two required parent pods is ready")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, cl.RestartAPIServer(ctx, nil))
	require.Eventually(t, logged("watching parent pods failed; resuming the watch"), waitFor, tick, "the waiter noticed the outage")
	running("after the apiserver restart")

	readyAt := time.Now()
	e.markReady(&leaders[1])
	require.Eventually(t, func() bool { exited, _ := waiter.Exited(); return exited }, waitFor, 50*time.Millisecond, "the waiter exits")
	_, exitErr := waiter.Exited()
	require.NoError(t, exitErr, "exit status 0:\n%s", readFile(waiter.LogPath()))
	assert.Less(t, time.Since(readyAt), 15*time.Second, "exits promptly once the parent is ready")
	assert.True(t, logged("every parent PodClique is ready")())
	t.Logf("waiter log:\n%s", readFile(waiter.LogPath()))
}

// markReady patches a pod's status to Running and Ready, as a kubelet would.
func (e *env) markReady(p *corev1.Pod) {
	e.t.Helper()
	patch := client.MergeFrom(p.DeepCopy())
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
	require.NoError(e.t, e.c.Status().Patch(e.ctx, p, patch))
}

// buildOperator builds grove-operator into bin.
func buildOperator(bin string) error {
	root, err := cluster.ModuleRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/grove-operator")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return &buildError{err: err, out: string(out)}
	}
	return nil
}

type buildError struct {
	err error
	out string
}

func (b *buildError) Error() string { return b.err.Error() + ": " + b.out }

func readFile(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}
