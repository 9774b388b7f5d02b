package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// auditPolicy records every request of grove-operator's ServiceAccount at Metadata level (no
// bodies) and nothing else: the operator's API traffic, counted by resource and verb.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    users: ["%s"]
  - level: None
`

// auditEvent is the part of an audit.k8s.io/v1 Event the benchmark counts.
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	RequestURI               string    `json:"requestURI"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
}

type request struct {
	at       time.Time
	resource string // resource[/subresource]
	verb     string // "create(dryRun)" etc. for a dry run: it writes nothing
}

// dryRunVerb marks a dry-run request's verb: the operator dry-runs a replacement pod before it
// deletes a healthy one for an update, and such a create is no pod.
func dryRunVerb(verb, uri string) string {
	if strings.Contains(uri, "dryRun=") {
		return verb + "(dryRun)"
	}
	return verb
}

func (r request) write() bool {
	switch r.verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// readAudit returns the completed requests of the audit log (a watch's ResponseStarted is
// not counted twice).
func readAudit(path string) ([]request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []request
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if ev.Stage != "ResponseComplete" && ev.Stage != "Panic" {
			continue
		}
		res := "(none)"
		if ev.ObjectRef != nil {
			res = ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				res += "/" + ev.ObjectRef.Subresource
			}
		}
		out = append(out, request{at: ev.RequestReceivedTimestamp, resource: res, verb: dryRunVerb(ev.Verb, ev.RequestURI)})
	}
	return out, sc.Err()
}

// countRequests counts the requests received in [from, to) by "resource verb".
func countRequests(reqs []request, from, to time.Time) (total, writes int, by map[string]int) {
	by = map[string]int{}
	for _, r := range reqs {
		if r.at.Before(from) || !r.at.Before(to) {
			continue
		}
		total++
		if r.write() {
			writes++
		}
		by[r.resource+" "+r.verb]++
	}
	return total, writes, by
}

// cpuSeconds is the user+system CPU time of a process (from /proc/<pid>/stat, in clock ticks
// of 100 Hz, the Linux USER_HZ).
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may contain spaces.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parsing /proc/%d/stat", pid)
	}
	return (utime + stime) / 100, nil
}

// clusterCPU is the CPU seconds (cpuSeconds) of every process of the local control plane,
// by executable name: the processes whose command line names the cluster's directory
// (kube-apiserver, etcd, kwok, kube-controller-manager, the schedulers and grove-operator all
// take their certificates, data, kubeconfig or config from it). On a machine of two cores it
// shows which of them the time of a workload went to.
func clusterCPU(dir string) map[string]float64 {
	out := map[string]float64{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.Contains(string(cmdline), dir) {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if s, err := cpuSeconds(pid); err == nil {
			out[filepath.Base(args[0])] += s
		}
	}
	return out
}

// peakRSSMiB is VmHWM of a process.
func peakRSSMiB(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
