package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
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

// FreePort returns a loopback port that is free now, chosen below the kernel's ephemeral
// range. A port taken from the ephemeral range (":0") can be handed to an outgoing
// connection of another test process between our Close and the server's bind, which made
// kube-apiserver fail with "address already in use" when test packages run in parallel.
//
// A port is handed out once per process: the ports of one environment are asked for one after
// another before any is bound, and two draws of the same free port made grove-operator refuse
// its configuration (two servers on one port).
func FreePort() (int, error) {
	low, _ := ephemeralRange()
	// Up to 12000 ports just under the ephemeral range, never below 10000.
	base := max(10000, low-12000)
	span := low - base
	if span > 0 {
		for range 200 {
			port := base + rand.IntN(span)
			if !handOut(port) {
				continue
			}
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err != nil {
				continue
			}
			_ = l.Close()
			return port, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// handOut records port as handed out by FreePort, reporting false if it already was.
func handOut(port int) bool {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports[port] {
		return false
	}
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	handedOut.ports[port] = true
	return true
}

// ephemeralRange reads the kernel's local port range, defaulting to Linux's.
func ephemeralRange() (low, high int) {
	low, high = 32768, 60999
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return low, high
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return low, high
	}
	l, err1 := strconv.Atoi(fields[0])
	h, err2 := strconv.Atoi(fields[1])
	if err1 != nil || err2 != nil {
		return low, high
	}
	return l, h
}

// lostPortRace reports whether a process exited because another process took its port
// between FreePort and its bind; the caller then starts it again on fresh ports.
func lostPortRace(p *process) bool {
	if p == nil || !p.exited() {
		return false
	}
	data, err := os.ReadFile(p.log)
	return err == nil && strings.Contains(string(data), "address already in use")
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
