package cluster

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	certutil "k8s.io/client-go/util/cert"
)

func TestFreePortIsBelowTheEphemeralRange(t *testing.T) {
	low, _ := ephemeralRange()
	for range 20 {
		port, err := FreePort()
		require.NoError(t, err)
		require.Less(t, port, low, "a port from the ephemeral range can be taken by an outgoing connection before the server binds it")
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		require.NoError(t, err, "FreePort returned a port that is in use")
		require.NoError(t, l.Close())
	}
}

// The ports of one environment are asked for before any is bound: FreePort never hands out
// the same port twice in a process (2000 draws from about 12000 ports would repeat one).
func TestFreePortHandsOutAPortOnce(t *testing.T) {
	seen := map[int]bool{}
	for range 2000 {
		port, err := FreePort()
		require.NoError(t, err)
		require.False(t, seen[port], "port %d handed out twice", port)
		seen[port] = true
	}
}

// A server that lost its port between FreePort and bind is started again; any other
// failure is returned as it is.
func TestStartRetriesOnlyALostPortRace(t *testing.T) {
	dir := t.TempDir()
	var p *process
	run := func(script string) error {
		p = &process{name: "server", path: "/bin/sh", args: []string{"-c", script}, log: filepath.Join(dir, "server.log")}
		require.NoError(t, p.start())
		select {
		case <-p.done:
			return fmt.Errorf("server exited")
		case <-time.After(300 * time.Millisecond):
			return nil
		}
	}
	attempts := 0
	lostOnce := func() error {
		attempts++
		if attempts == 1 {
			// How kube-apiserver and etcd report a port taken before they bound it.
			return run(`echo 'listen tcp 127.0.0.1:41709: bind: address already in use'; exit 1`)
		}
		return run("exec sleep 60")
	}
	require.NoError(t, startRetryingPortRace(lostOnce, func() *process { return p }))
	require.Equal(t, 2, attempts)
	require.NoError(t, p.stop(5*time.Second))

	attempts = 0
	otherFailure := func() error {
		attempts++
		return run("echo 'invalid flag'; exit 1")
	}
	require.Error(t, startRetryingPortRace(otherFailure, func() *process { return p }))
	require.Equal(t, 1, attempts, "a failure other than a lost port is not retried")
}

// kube-apiserver writes its self-signed certificate by create-then-write: a reader can find
// the file empty or cut off. The CA read then must be the whole file, or every TLS probe of
// the apiserver fails until the start times out (a CI failure: "waiting for kube-apiserver:
// context deadline exceeded" with a healthy apiserver log).
func TestServingCertificateIsReadOnlyOnceWhole(t *testing.T) {
	certPEM, _, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", nil, nil)
	require.NoError(t, err)
	require.Greater(t, bytes.Count(certPEM, []byte("BEGIN CERTIFICATE")), 1, "the fixture is a serving certificate and its CA")
	path := filepath.Join(t.TempDir(), "apiserver.crt")
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	written := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		// Cut off inside the second block, as a write in progress leaves it.
		if err := os.WriteFile(path, certPEM[:len(certPEM)-40], 0o644); err != nil {
			written <- err
			return
		}
		time.Sleep(200 * time.Millisecond)
		written <- os.WriteFile(path, certPEM, 0o644)
	}()
	got, err := waitForCertificate(path, func() bool { return false }, 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, <-written)
	require.Equal(t, string(certPEM), string(got))

	_, err = waitForCertificate(filepath.Join(t.TempDir(), "missing.crt"), func() bool { return true }, 10*time.Second)
	require.ErrorContains(t, err, "no certificate in", "a server that exited before writing its certificate fails the wait at once")
}
