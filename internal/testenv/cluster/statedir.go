package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StopRecorded stops the processes whose pids a control plane recorded in dir (for
// cluster-down when the supervising process is gone): SIGTERM, then SIGKILL.
func StopRecorded(dir string) error {
	pids, err := RecordedPIDs(dir)
	if err != nil || len(pids) == 0 {
		return err
	}
	for _, pid := range pids {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for processAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if processAlive(pid) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
	for _, pid := range pids {
		if processAlive(pid) {
			return fmt.Errorf("process %d still running", pid)
		}
	}
	return os.Remove(filepath.Join(dir, pidFileName))
}

// ProcessAlive reports whether a process exists and is not a zombie.
func ProcessAlive(pid int) bool { return processAlive(pid) }

// RecordedPIDs returns the pids of the processes a control plane recorded in dir (none when it
// recorded nothing).
func RecordedPIDs(dir string) ([]int, error) {
	data, err := os.ReadFile(filepath.Join(dir, pidFileName))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, line := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(line)
		if err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
