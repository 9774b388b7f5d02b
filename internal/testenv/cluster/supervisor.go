package cluster

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// SupervisorPIDFile names the file where a background supervisor (grove-cluster serve,
// grove-demo serve) records its pid in its state directory.
const SupervisorPIDFile = "supervisor.pid"

// WriteSupervisorPID records the calling process as the supervisor of dir.
func WriteSupervisorPID(dir string) error { return RecordSupervisorPID(dir, os.Getpid()) }

// RecordSupervisorPID records pid as the supervisor of dir, e.g. by the process that started it
// detached, so that StopSupervised finds it even before it is ready.
func RecordSupervisorPID(dir string, pid int) error {
	return os.WriteFile(filepath.Join(dir, SupervisorPIDFile), []byte(strconv.Itoa(pid)), 0o644)
}

// SupervisorPID returns the recorded supervisor pid of dir, or 0.
func SupervisorPID(dir string) int {
	data, err := os.ReadFile(filepath.Join(dir, SupervisorPIDFile))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

// StopSupervised stops the supervisor of dir (SIGTERM, then SIGKILL after grace) — it stops
// its children — and then any recorded process it left behind.
func StopSupervised(dir string, grace time.Duration) error {
	if pid := SupervisorPID(dir); pid > 0 && ProcessAlive(pid) {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		deadline := time.Now().Add(grace)
		for ProcessAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if ProcessAlive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if err := StopRecorded(dir); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(dir, SupervisorPIDFile))
	return nil
}
