package cluster

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"
)

// StartForTest starts a control plane for one test and stops it in t.Cleanup.
func StartForTest(t testing.TB, opts Options) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("starting control plane: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("control plane logs:\n%s", c.LogTail(30))
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stopping control plane: %v", err)
		}
	})
	return c
}

// Shared is a control plane shared by the tests of one package; start it from TestMain with
// RunShared so the package's tests do not each pay the start-up time.
var Shared *Cluster

// RunShared starts Shared, runs the package's tests and stops it. It returns the exit code.
// With -short no control plane is started (tests that need one skip themselves).
func RunShared(m *testing.M, opts Options) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	c, err := Start(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting control plane: %v\n", err)
		return 1
	}
	Shared = c
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "control plane logs:\n%s", c.LogTail(30))
	}
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping control plane: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// TestNamespace creates a uniquely named namespace for a test on c.
func (c *Cluster) TestNamespace(t testing.TB) string {
	t.Helper()
	if c == nil && testing.Short() {
		t.Skip("needs the control plane, which -short does not start")
	}
	name := strings.ToLower(fmt.Sprintf("t-%s-%s", truncate(sanitize(t.Name()), 40), rand.String(5)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.CreateNamespace(ctx, name); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteRune('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

func truncate(s string, n int) string {
	if len(s) > n {
		return strings.Trim(s[:n], "-")
	}
	return s
}
