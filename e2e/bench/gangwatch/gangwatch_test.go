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
}
