package cluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// process is one child program of the control plane.
type process struct {
	name string
	path string
	args []string
	env  []string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// start runs the process from a goroutine locked to its OS thread: the parent-death signal
// fires when the creating thread exits, so the thread must outlive the child.
func (p *process) start() error {
	logFile, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	p.done = make(chan struct{})
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer logFile.Close()
		cmd := exec.Command(p.path, p.args...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if len(p.env) > 0 {
			cmd.Env = append(os.Environ(), p.env...)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			started <- err
			close(p.done)
			runtime.UnlockOSThread()
			return
		}
		p.cmd = cmd
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
		// The thread is left locked on purpose: it exits with this goroutine.
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	return nil
}

func (p *process) pid() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after the grace period.
func (p *process) stop(grace time.Duration) error {
	if p.cmd == nil || p.exited() {
		return nil
	}
	pgid := p.pid()
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, pgid)
		}
	}
	return nil
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// processAlive reports whether a pid still exists (and is not a zombie we own).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err == nil {
		// A zombie still answers kill(0); read its state.
		data, rerr := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if rerr == nil {
			for i := len(data) - 1; i >= 0; i-- {
				if data[i] == ')' && i+2 < len(data) {
					return data[i+2] != 'Z'
				}
			}
		}
		return true
	}
	return !errors.Is(err, syscall.ESRCH)
}
