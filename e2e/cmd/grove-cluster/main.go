// grove-cluster runs the local control plane (etcd, kube-apiserver, kube-controller-manager)
// in the background for people who want to poke at it with kubectl.
//
//	grove-cluster up   --state-dir DIR   start it detached and print the kubeconfig path
//	grove-cluster down --state-dir DIR   stop it
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
)

const (
	readyFile = "ready"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	stateDir := fs.String("state-dir", ".cluster", "directory for the control plane's data, logs and kubeconfig")
	thirdParty := fs.Bool("third-party-crds", true, "also install the KAI, Koordinator, Volcano and scheduler-plugins CRDs")
	_ = fs.Parse(os.Args[2:])
	dir, err := filepath.Abs(*stateDir)
	if err != nil {
		fail(err)
	}
	switch os.Args[1] {
	case "up":
		err = up(dir, *thirdParty)
	case "serve":
		err = serve(dir, *thirdParty)
	case "down":
		err = down(dir)
	default:
		usage()
	}
	if err != nil {
		fail(err)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: grove-cluster up|down [--state-dir DIR]")
	os.Exit(2)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "grove-cluster:", err)
	os.Exit(1)
}

// up starts `serve` as a detached process and waits until the control plane is ready.
func up(dir string, thirdParty bool) error {
	if pid := cluster.SupervisorPID(dir); pid > 0 && cluster.ProcessAlive(pid) {
		fmt.Printf("already running (pid %d)\nexport KUBECONFIG=%s\n", pid, filepath.Join(dir, "kubeconfig"))
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(dir, readyFile))
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logPath := filepath.Join(dir, "grove-cluster.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(self, "serve", "--state-dir", dir, "--third-party-crds="+strconv.FormatBool(thirdParty))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	fmt.Println(">> starting etcd, kube-apiserver and kube-controller-manager ...")
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(dir, readyFile)); err == nil {
			fmt.Printf("control plane is up (supervisor pid %d)\n  export KUBECONFIG=%s\n  kubectl get crds\nstop it with: make cluster-down\n",
				cmd.Process.Pid, filepath.Join(dir, "kubeconfig"))
			return nil
		}
		if !cluster.ProcessAlive(cmd.Process.Pid) {
			data, _ := os.ReadFile(logPath)
			return fmt.Errorf("control plane failed to start:\n%s", data)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("control plane did not become ready within 3 minutes; see " + logPath)
}

// serve runs the control plane in the foreground until SIGTERM/SIGINT.
func serve(dir string, thirdParty bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	c, err := cluster.Start(ctx, cluster.Options{Dir: dir, KeepDir: true, WithThirdPartyCRDs: thirdParty})
	if err != nil {
		return err
	}
	if err := cluster.WriteSupervisorPID(dir); err != nil {
		_ = c.Stop()
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, readyFile), []byte(c.KubeconfigPath), 0o644); err != nil {
		_ = c.Stop()
		return err
	}
	fmt.Println("ready; kubeconfig", c.KubeconfigPath)
	<-ctx.Done()
	fmt.Println("stopping")
	err = c.Stop()
	_ = os.Remove(filepath.Join(dir, readyFile))
	return err
}

func down(dir string) error {
	if err := cluster.StopSupervised(dir, 15*time.Second); err != nil {
		return err
	}
	fmt.Println("control plane stopped")
	return nil
}
