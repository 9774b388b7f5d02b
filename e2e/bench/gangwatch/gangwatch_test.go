package gangwatch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// The watcher deletes a gang of a run-to-completion workload once all of it is bound, and
// leaves a gang that is not whole alone.
func TestWatcherDeletesCompletedGangs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := fake.NewClientset(node("n1", "r1", "4"))
	w, err := Start(ctx, client, Options{Name: "Contention/500Nodes", Deadline: time.Hour})
	require.NoError(t, err)

	pods := client.CoreV1().Pods("ns")
	for _, p := range []*corev1.Pod{pod("a", 0, 2, 2, "n1", true), pod("a", 1, 2, 2, "n1", true), pod("b", 0, 2, 2, "n1", true)} {
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		list, err := pods.List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 1 && list.Items[0].Name == "b-0"
	}, 10*time.Second, 20*time.Millisecond, "gang a was not deleted, or gang b was")

	r := w.Stop()
	assert.Equal(t, 1, r.WholeGangs)
	assert.False(t, r.Finished)
	dir := t.TempDir()
	require.NoError(t, r.Write(dir))
	_, err = os.Stat(filepath.Join(dir, "gangwatch_Contention_500Nodes.json"))
	assert.NoError(t, err)
	// A second round's report of the same workload is kept next to the first.
	require.NoError(t, r.Write(dir))
	_, err = os.Stat(filepath.Join(dir, "gangwatch_Contention_500Nodes_2.json"))
	assert.NoError(t, err)
}

// Stop reports the state the API holds when it is called, even when the watch is still behind:
// here the pods exist (bound) in the API, but the watcher has handled only one of them.
func TestStopWaitsForTheWatchToCatchUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a0, a1 := pod("a", 0, 2, 1, "n1", false), pod("a", 1, 2, 1, "n1", false)
	a0.ResourceVersion, a1.ResourceVersion = "10", "12"
	client := fake.NewClientset(a0, a1)
	w := &Watcher{ctx: ctx, cancel: func() {}, client: client, opts: Options{Name: "lagging"},
		tracker: newTracker(DefaultRackLabel, 5*time.Second), seen: map[types.UID]string{}}
	w.tracker.setNode(node("n1", "r1", "4"))
	w.onPod(a0)

	reports := make(chan Report, 1)
	go func() { reports <- w.Stop() }()
	select {
	case r := <-reports:
		t.Fatalf("Stop returned before the watch caught up: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	older := a1.DeepCopy()
	older.ResourceVersion, older.Spec.NodeName = "11", ""
	w.onPod(older)
	w.onPod(a1)
	r := <-reports
	assert.Equal(t, 1, r.WholeGangs)
	assert.True(t, r.Finished)
}

func TestHandled(t *testing.T) {
	for _, tc := range []struct {
		seen, listed string
		want         bool
	}{
		{seen: "", listed: "7", want: false},
		{seen: "6", listed: "7", want: false},
		{seen: "7", listed: "7", want: true},
		{seen: "12", listed: "7", want: true},
		{seen: deletedVersion, listed: "7", want: true},
		{seen: "", listed: "", want: true},
		{seen: "x", listed: "y", want: false},
	} {
		assert.Equal(t, tc.want, handled(tc.seen, tc.listed), "seen %q listed %q", tc.seen, tc.listed)
	}
}
