// Package startupwaiter is the init container that enforces a PodCliqueSet's clique startup
// order: it blocks a pod until each of its parent PodCliques has at least minAvailable Ready
// pods, then exits 0. It runs as `grove-operator wait-for-cliques` with a token of the
// PodCliqueSet's ServiceAccount, which may only read pods; it reads the parents' pods by
// label; a broken watch resumes from where it stopped (apiserver restarts included) and only a
// watch that cannot resume costs a re-list, with backoff.
package startupwaiter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
)

// CommandName is the grove-operator subcommand that runs the waiter.
const CommandName = "wait-for-cliques"

// DefaultCredentialsDir is where a pod finds a ServiceAccount token and the cluster CA; the
// operator mounts the PodCliqueSet's token Secret there in the waiter container only.
const DefaultCredentialsDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// Flag names, shared by the operator (which writes the init container's arguments) and the
// subcommand (which parses them).
const (
	flagNamespace    = "namespace"
	flagPodCliqueSet = "podcliqueset"
	flagParent       = "parent"
)

// Parent is a PodClique the pod starts after and how many of its pods must be Ready.
type Parent struct {
	PodClique    string
	MinAvailable int32
}

// Config is what the waiter waits for.
type Config struct {
	// Namespace of the PodCliqueSet.
	Namespace string
	// PodCliqueSet the parents belong to (their pods' part-of label).
	PodCliqueSet string
	// Parents are the PodCliques to wait for.
	Parents []Parent
}

// Args is the command line that makes grove-operator wait for cfg.
func Args(cfg Config) []string {
	args := []string{CommandName, "--" + flagNamespace + "=" + cfg.Namespace, "--" + flagPodCliqueSet + "=" + cfg.PodCliqueSet}
	for _, p := range cfg.Parents {
		args = append(args, fmt.Sprintf("--%s=%s:%d", flagParent, p.PodClique, p.MinAvailable))
	}
	return args
}

// AddFlags binds the flags Args writes to cfg.
func (cfg *Config) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&cfg.Namespace, flagNamespace, "", "namespace of the PodCliqueSet")
	fs.StringVar(&cfg.PodCliqueSet, flagPodCliqueSet, "", "name of the PodCliqueSet")
	fs.Var(&parentsValue{&cfg.Parents}, flagParent, "parent PodClique and its minAvailable as <podclique>:<minAvailable>; repeatable")
}

// Validate reports a configuration the waiter cannot act on.
func (cfg *Config) Validate() error {
	switch {
	case cfg.Namespace == "":
		return fmt.Errorf("--%s is required", flagNamespace)
	case cfg.PodCliqueSet == "":
		return fmt.Errorf("--%s is required", flagPodCliqueSet)
	}
	return nil
}

// parentsValue parses repeated --parent flags.
type parentsValue struct{ parents *[]Parent }

func (v *parentsValue) String() string {
	if v.parents == nil {
		return ""
	}
	parts := make([]string, 0, len(*v.parents))
	for _, p := range *v.parents {
		parts = append(parts, fmt.Sprintf("%s:%d", p.PodClique, p.MinAvailable))
	}
	return strings.Join(parts, ",")
}

func (v *parentsValue) Set(s string) error {
	name, count, ok := strings.Cut(s, ":")
	n, err := strconv.ParseInt(count, 10, 32)
	if !ok || name == "" || err != nil || n < 0 {
		return fmt.Errorf("want <podclique>:<minAvailable>, got %q", s)
	}
	*v.parents = append(*v.parents, Parent{PodClique: name, MinAvailable: int32(n)})
	return nil
}

func (*parentsValue) Type() string { return "podclique:minAvailable" }

// InClusterConfig is rest.InClusterConfig with the credentials read from dir: the token file
// is re-read as it rotates, and the apiserver is the one the pod's environment names.
func InClusterConfig(dir string) (*rest.Config, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, fmt.Errorf("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set (the waiter runs in a pod)")
	}
	tokenFile := filepath.Join(dir, corev1.ServiceAccountTokenKey)
	if _, err := os.Stat(tokenFile); err != nil {
		return nil, fmt.Errorf("reading the ServiceAccount token: %w", err)
	}
	return &rest.Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		BearerTokenFile: tokenFile,
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(dir, corev1.ServiceAccountRootCAKey)},
	}, nil
}

// DefaultRetry paces re-lists after a failed list or a broken watch: quick at first, at most
// every few seconds, so an apiserver that comes back is noticed promptly.
var DefaultRetry = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: 5 * time.Second}

// Waiter waits for the parents of one pod.
type Waiter struct {
	Client kubernetes.Interface
	Config Config
	Log    logr.Logger
	// Retry paces re-lists; DefaultRetry when zero.
	Retry wait.Backoff
}

// Wait returns nil once every parent has at least minAvailable Ready pods, or the context's
// error. Failed lists and broken watches are retried for as long as the context lasts.
func (w *Waiter) Wait(ctx context.Context) error {
	if len(w.Config.Parents) == 0 {
		return nil
	}
	selector, err := w.selector()
	if err != nil {
		return err
	}
	retry := w.Retry
	if retry.Duration == 0 {
		retry = DefaultRetry
	}
	backoff := retry
	st := newReadiness(w.Config.Parents)
	w.Log.Info("waiting for parent PodCliques", "namespace", w.Config.Namespace, "parents", st.summary())
	pods := w.Client.CoreV1().Pods(w.Config.Namespace)
	for {
		done, listed, err := w.listAndWatch(ctx, pods, selector, st)
		if listed {
			// The apiserver answered: the next failure starts the backoff afresh.
			backoff = retry
		}
		if done {
			w.Log.Info("every parent PodClique is ready", "parents", st.summary())
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		delay := backoff.Step()
		w.Log.Info("re-listing after an error", "error", err.Error(), "retryIn", delay.Round(time.Millisecond).String())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
	}
}

// listAndWatch lists the parents' pods (listed), then follows them until every parent is ready
// (done) or the watch cannot go on (an error; the caller lists again). client-go's
// RetryWatcher resumes a watch that closed or failed from the last resourceVersion it
// delivered, at most once a second, so an apiserver restart costs no re-list; it gives up
// only when resuming is impossible (410 Gone, credentials refused) and says so in an Error
// event.
func (w *Waiter) listAndWatch(ctx context.Context, pods podsClient, selector string, st *readiness) (done, listed bool, err error) {
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return false, false, fmt.Errorf("listing pods: %w", err)
	}
	st.reset(list.Items)
	w.Log.Info("listed parent pods", "parents", st.summary())
	if st.satisfied() {
		return true, true, nil
	}
	watcher, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			wi, err := pods.Watch(ctx, opts)
			if err != nil && ctx.Err() == nil {
				w.Log.Info("watching parent pods failed; resuming the watch", "error", err.Error(), "resourceVersion", opts.ResourceVersion)
			}
			return wi, err
		},
	})
	if err != nil {
		return false, true, fmt.Errorf("watching pods: %w", err)
	}
	defer watcher.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, true, ctx.Err()
		case ev, ok := <-watcher.ResultChan():
			if !ok {
				return false, true, errors.New("the pod watch stopped")
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if pod, ok := ev.Object.(*corev1.Pod); ok && st.observe(pod) {
					w.Log.Info("parent readiness changed", "parents", st.summary())
				}
			case watch.Deleted:
				if pod, ok := ev.Object.(*corev1.Pod); ok && st.forget(pod) {
					w.Log.Info("parent readiness changed", "parents", st.summary())
				}
			case watch.Error:
				return false, true, fmt.Errorf("the pod watch cannot resume: %w", apierrors.FromObject(ev.Object))
			}
			if st.satisfied() {
				return true, true, nil
			}
		}
	}
}

type podsClient interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// selector matches the pods of the parent PodCliques of the PodCliqueSet.
func (w *Waiter) selector() (string, error) {
	names := make([]string, 0, len(w.Config.Parents))
	for _, p := range w.Config.Parents {
		names = append(names, p.PodClique)
	}
	sel := labels.SelectorFromSet(labels.Set{
		apicommon.LabelManagedByKey: apicommon.LabelManagedByValue, apicommon.LabelPartOfKey: w.Config.PodCliqueSet,
	})
	req, err := labels.NewRequirement(apicommon.LabelPodClique, selection.In, names)
	if err != nil {
		return "", fmt.Errorf("parent PodClique names: %w", err)
	}
	return sel.Add(*req).String(), nil
}

// readiness tracks which pods of each parent PodClique are Ready.
type readiness struct {
	want  map[string]int32
	ready map[string]map[types.UID]bool
}

func newReadiness(parents []Parent) *readiness {
	r := &readiness{want: map[string]int32{}, ready: map[string]map[types.UID]bool{}}
	for _, p := range parents {
		r.want[p.PodClique] = max(r.want[p.PodClique], p.MinAvailable)
		r.ready[p.PodClique] = map[types.UID]bool{}
	}
	return r
}

func (r *readiness) reset(pods []corev1.Pod) {
	for k := range r.ready {
		r.ready[k] = map[types.UID]bool{}
	}
	for i := range pods {
		r.observe(&pods[i])
	}
}

// observe records a pod's readiness and reports whether a count changed.
func (r *readiness) observe(pod *corev1.Pod) bool {
	set, ok := r.ready[pod.Labels[apicommon.LabelPodClique]]
	if !ok {
		return false
	}
	before := len(set)
	if pod.DeletionTimestamp == nil && isReady(pod) {
		set[pod.UID] = true
	} else {
		delete(set, pod.UID)
	}
	return len(set) != before
}

func (r *readiness) forget(pod *corev1.Pod) bool {
	set, ok := r.ready[pod.Labels[apicommon.LabelPodClique]]
	if !ok || !set[pod.UID] {
		return false
	}
	delete(set, pod.UID)
	return true
}

func (r *readiness) satisfied() bool {
	for name, want := range r.want {
		if int32(len(r.ready[name])) < want {
			return false
		}
	}
	return true
}

// summary is "<podclique>=<ready>/<minAvailable>" per parent, sorted.
func (r *readiness) summary() string {
	names := slices.Collect(maps.Keys(r.want))
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s=%d/%d", n, len(r.ready[n]), r.want[n]))
	}
	return strings.Join(parts, ",")
}

func isReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
