package startupwaiter

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
)

// TestArgsRoundTrip: the arguments the operator writes parse back into the same configuration.
func TestArgsRoundTrip(t *testing.T) {
	want := Config{Namespace: "ns", PodCliqueSet: "p", Parents: []Parent{{"p-0-a", 2}, {"p-0-g-1-b", 1}}}
	args := Args(want)
	require.Equal(t, CommandName, args[0])
	got := Config{}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	got.AddFlags(fs)
	require.NoError(t, fs.Parse(args[1:]))
	assert.Equal(t, want, got)
	require.NoError(t, got.Validate())

	for _, bad := range []string{"--parent=a", "--parent=:1", "--parent=a:-1", "--parent=a:x"} {
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		(&Config{}).AddFlags(fs)
		assert.Error(t, fs.Parse([]string{bad}), bad)
	}
	assert.Error(t, (&Config{PodCliqueSet: "p"}).Validate(), "namespace required")
}

func pod(uid, pclq string, ready, terminating bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Labels: map[string]string{apicommon.LabelPodClique: pclq}}}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	if terminating {
		p.DeletionTimestamp = &metav1.Time{}
	}
	return p
}

// TestReadiness: only Ready, non-terminating pods of a parent count, each once.
func TestReadiness(t *testing.T) {
	r := newReadiness([]Parent{{"a", 2}, {"b", 1}})
	assert.False(t, r.satisfied())
	assert.True(t, r.observe(pod("1", "a", true, false)))
	assert.False(t, r.observe(pod("1", "a", true, false)), "the same pod counts once")
	assert.False(t, r.observe(pod("9", "other", true, false)), "not a parent")
	assert.False(t, r.observe(pod("2", "a", true, true)), "terminating pods do not count")
	assert.True(t, r.observe(pod("3", "b", true, false)))
	assert.Equal(t, "a=1/2,b=1/1", r.summary())
	assert.False(t, r.satisfied())
	assert.True(t, r.observe(pod("4", "a", true, false)))
	assert.True(t, r.satisfied())
	assert.True(t, r.observe(pod("4", "a", false, false)), "a pod that stops being ready no longer counts")
	assert.False(t, r.satisfied())
	assert.True(t, r.forget(pod("1", "a", true, false)))
	r.reset([]corev1.Pod{*pod("5", "a", true, false), *pod("6", "a", true, false), *pod("7", "b", true, false)})
	assert.Equal(t, "a=2/2,b=1/1", r.summary())
	assert.True(t, r.satisfied())
}

// TestWaitRelistsAfterAWatchError: a watch that cannot resume (410 Gone) makes the waiter list
// again (with backoff) instead of failing; it returns once the re-list shows the parent ready.
func TestWaitRelistsAfterAWatchError(t *testing.T) {
	labels := map[string]string{apicommon.LabelManagedByKey: apicommon.LabelManagedByValue, apicommon.LabelPartOfKey: "p", apicommon.LabelPodClique: "p-0-a"}
	notReady := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a-0", Namespace: "ns", UID: "1", Labels: labels}}
	cs := fake.NewClientset()
	lists := 0
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists++
		pod := notReady.DeepCopy()
		if lists > 1 {
			pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		return true, &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(lists)}, Items: []corev1.Pod{*pod}}, nil
	})
	w := watch.NewFake()
	cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, w, nil })
	go w.Error(&metav1.Status{Status: metav1.StatusFailure, Message: "too old resource version", Code: 410})

	waiter := &Waiter{Client: cs, Config: Config{Namespace: "ns", PodCliqueSet: "p", Parents: []Parent{{"p-0-a", 1}}},
		Log: logr.Discard(), Retry: wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 1 << 30}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, waiter.Wait(ctx))
	assert.Equal(t, 2, lists, "listed again after the watch error")
}

// TestWaitHonoursTheContext: without ready parents the waiter blocks until its context ends.
func TestWaitHonoursTheContext(t *testing.T) {
	cs := fake.NewClientset()
	waiter := &Waiter{Client: cs, Config: Config{Namespace: "ns", PodCliqueSet: "p", Parents: []Parent{{"p-0-a", 1}}}, Log: logr.Discard()}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, waiter.Wait(ctx), context.DeadlineExceeded)
}

// TestWaitResumesAClosedWatchWithoutRelisting: a watch the apiserver closes (a restart, a
// timeout) is resumed from the last resourceVersion delivered; the waiter lists only once.
func TestWaitResumesAClosedWatchWithoutRelisting(t *testing.T) {
	labels := map[string]string{apicommon.LabelManagedByKey: apicommon.LabelManagedByValue, apicommon.LabelPartOfKey: "p", apicommon.LabelPodClique: "p-0-a"}
	base := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a-0", Namespace: "ns", UID: "1", Labels: labels, ResourceVersion: "10"}}
	cs := fake.NewClientset()
	lists := 0
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists++
		return true, &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []corev1.Pod{base}}, nil
	})
	first, second := watch.NewFake(), watch.NewFake()
	var watchedFrom []string
	cs.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		watchedFrom = append(watchedFrom, a.(k8stesting.WatchActionImpl).WatchRestrictions.ResourceVersion)
		if len(watchedFrom) == 1 {
			return true, first, nil
		}
		return true, second, nil
	})
	go func() {
		relabelled := base.DeepCopy()
		relabelled.ResourceVersion = "11"
		first.Modify(relabelled)
		first.Stop() // the apiserver goes away
		ready := base.DeepCopy()
		ready.ResourceVersion = "12"
		ready.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		second.Modify(ready)
	}()

	waiter := &Waiter{Client: cs, Config: Config{Namespace: "ns", PodCliqueSet: "p", Parents: []Parent{{"p-0-a", 1}}}, Log: logr.Discard()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, waiter.Wait(ctx))
	assert.Equal(t, 1, lists, "no re-list")
	assert.Equal(t, []string{"10", "11"}, watchedFrom, "the second watch resumes after the last event delivered")
}
