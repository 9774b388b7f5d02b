package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options configures a control plane.
type Options struct {
	// Dir holds data, certificates, logs and the kubeconfig; a temporary directory when empty.
	Dir string
	// KeepDir leaves Dir in place after Stop.
	KeepDir bool
	// BinDir holds etcd, kube-apiserver and kube-controller-manager; BinDir() when empty.
	BinDir string
	// WithoutControllerManager skips kube-controller-manager (no garbage collection).
	WithoutControllerManager bool
	// ExtraControllers are kube-controller-manager controllers run besides the garbage
	// collector and the serviceaccount and namespace controllers (e.g.
	// "podgroup-protection-controller", which lets unused Workload API PodGroups go).
	ExtraControllers []string
	// FeatureGates are passed to kube-apiserver and kube-controller-manager.
	FeatureGates map[string]bool
	// RuntimeConfig entries are passed to kube-apiserver's --runtime-config.
	RuntimeConfig []string
	// CRDPaths are files or directories of CRD manifests installed before Start returns;
	// Grove's own CRDs are always installed unless SkipGroveCRDs is set.
	CRDPaths []string
	// SkipGroveCRDs leaves Grove's CRDs out.
	SkipGroveCRDs bool
	// WithThirdPartyCRDs also installs the KAI, Koordinator, Volcano and scheduler-plugins CRDs.
	WithThirdPartyCRDs bool
	// AdvertiseAddress, when set, is a non-loopback address of this machine: kube-apiserver
	// listens on every address, advertises this one as the endpoint of the default/kubernetes
	// Service (lease endpoint reconciler) and APIServerURL names it, so that pods on a real
	// node (internal/testenv/realnode) reach it. Empty: loopback only, no endpoints.
	AdvertiseAddress string
	// APIServerArgs are extra kube-apiserver flags.
	APIServerArgs []string
	// ControllerManagerArgs are extra kube-controller-manager flags (e.g. its client QPS).
	ControllerManagerArgs []string
}

// WorkloadAPIFeatureGates serve the scheduling.k8s.io Workload/PodGroup API (v1beta1) together
// with RuntimeConfig "scheduling.k8s.io/v1beta1=true" (beta APIs are off by default).
var WorkloadAPIFeatureGates = map[string]bool{"GenericWorkload": true}

// Cluster is a running control plane.
type Cluster struct {
	opts Options
	// Dir is the state directory.
	Dir string
	// Config is an admin client configuration.
	Config *rest.Config
	// KubeconfigPath is an admin kubeconfig file.
	KubeconfigPath string
	// APIServerURL is https://127.0.0.1:<port> (or the AdvertiseAddress).
	APIServerURL string
	// AdminToken authenticates as system:masters.
	AdminToken string

	etcd, apiserver, kcm, kwok *process
	etcdURL                    string
	extra                      []*process
	apiserverArgs              []string
	tempDir                    bool
}

// Start brings up etcd, kube-apiserver and (unless disabled) kube-controller-manager, waits
// until they serve, and installs CRDs. On error every started process is stopped.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	c = &Cluster{opts: opts, Dir: opts.Dir}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "grove-cluster-"); err != nil {
			return nil, err
		}
		c.tempDir = !opts.KeepDir
	}
	if err = os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			logs := c.LogTail(40)
			_ = c.Stop()
			err = fmt.Errorf("%w\n%s", err, logs)
		}
	}()
	binDir := opts.BinDir
	if binDir == "" {
		if binDir, err = BinDir(); err != nil {
			return c, err
		}
	}
	if err = startRetryingPortRace(func() error { return c.startEtcd(ctx, binDir) }, func() *process { return c.etcd }); err != nil {
		return c, err
	}
	if err = startRetryingPortRace(func() error { return c.startAPIServer(ctx, binDir) }, func() *process { return c.apiserver }); err != nil {
		return c, err
	}
	if err = c.writePIDFile(); err != nil {
		return c, err
	}
	var paths []string
	if !opts.SkipGroveCRDs {
		dir, derr := CRDDir()
		if derr != nil {
			return c, derr
		}
		paths = append(paths, dir)
	}
	if opts.WithThirdPartyCRDs {
		dir, derr := ThirdPartyCRDDir()
		if derr != nil {
			return c, derr
		}
		paths = append(paths, dir)
	}
	paths = append(paths, opts.CRDPaths...)
	if len(paths) > 0 {
		if err = c.InstallCRDs(ctx, paths...); err != nil {
			return c, err
		}
	}
	// The controller-manager starts after the CRDs: its garbage collector discovers resources
	// at start-up and otherwise only every 30 seconds.
	if !opts.WithoutControllerManager {
		if err = startRetryingPortRace(func() error { return c.startControllerManager(ctx, binDir) }, func() *process { return c.kcm }); err != nil {
			return c, err
		}
		if err = c.writePIDFile(); err != nil {
			return c, err
		}
	}
	return c, nil
}

// startRetryingPortRace runs start up to three times while the process it started exits
// because it lost its port to another process (see FreePort).
func startRetryingPortRace(start func() error, started func() *process) error {
	var err error
	for range 3 {
		if err = start(); err == nil || !lostPortRace(started()) {
			return err
		}
		p := started()
		_ = p.stop(5 * time.Second)
		// The next attempt appends to the same log; keep the failed attempt's apart.
		_ = os.Rename(p.log, p.log+".port-race")
	}
	return err
}

func (c *Cluster) startEtcd(ctx context.Context, binDir string) error {
	path, err := requireBinary(binDir, "etcd")
	if err != nil {
		return err
	}
	clientPort, err := FreePort()
	if err != nil {
		return err
	}
	peerPort, err := FreePort()
	if err != nil {
		return err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	// A retried start must not find a half-initialised member from the failed attempt.
	if err := os.RemoveAll(filepath.Join(c.Dir, "etcd")); err != nil {
		return err
	}
	c.etcd = &process{name: "etcd", path: path, log: filepath.Join(c.Dir, "etcd.log"), args: []string{
		"--data-dir=" + filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=default=" + peer,
		"--unsafe-no-fsync=true", "--log-level=warn",
	}}
	if err := c.etcd.start(); err != nil {
		return err
	}
	c.etcdURL = client
	return c.waitHTTP(ctx, c.etcd, client+"/health", nil, 30*time.Second)
}

func (c *Cluster) startAPIServer(ctx context.Context, binDir string) error {
	path, err := requireBinary(binDir, "kube-apiserver")
	if err != nil {
		return err
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	certDir := filepath.Join(c.Dir, "pki")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	saKey, saPub, err := writeServiceAccountKeys(certDir)
	if err != nil {
		return err
	}
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return err
	}
	c.AdminToken = hex.EncodeToString(token)
	tokenFile := filepath.Join(certDir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(c.AdminToken+",admin,admin,system:masters\n"), 0o600); err != nil {
		return err
	}
	bind, advertise, reconciler := "127.0.0.1", "127.0.0.1", "none"
	if c.opts.AdvertiseAddress != "" {
		bind, advertise, reconciler = "0.0.0.0", c.opts.AdvertiseAddress, "lease"
	}
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=" + bind, "--advertise-address=" + advertise,
		"--secure-port=" + strconv.Itoa(port), "--cert-dir=" + certDir,
		"--token-auth-file=" + tokenFile,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + saPub, "--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.96.0.0/16", "--endpoint-reconciler-type=" + reconciler,
		"--allow-privileged=true",
		// No node lifecycle controller runs: new Nodes would stay tainted not-ready.
		"--disable-admission-plugins=TaintNodesByCondition",
		"--profiling=false",
	}
	if gates := featureGateFlag(c.opts.FeatureGates); gates != "" {
		args = append(args, "--feature-gates="+gates)
	}
	if len(c.opts.RuntimeConfig) > 0 {
		args = append(args, "--runtime-config="+strings.Join(c.opts.RuntimeConfig, ","))
	}
	args = append(args, c.opts.APIServerArgs...)
	c.apiserverArgs = args
	// The self-signed serving certificate names the advertised address.
	c.APIServerURL = fmt.Sprintf("https://%s:%d", advertise, port)
	c.apiserver = &process{name: "kube-apiserver", path: path, args: args, log: filepath.Join(c.Dir, "kube-apiserver.log")}
	if err := c.apiserver.start(); err != nil {
		return err
	}
	if err := c.waitAPIServer(ctx); err != nil {
		return err
	}
	return c.writeKubeconfig()
}

func (c *Cluster) waitAPIServer(ctx context.Context) error {
	caPEM, err := waitForCertificate(filepath.Join(c.Dir, "pki", "apiserver.crt"), c.apiserver.exited, 60*time.Second)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	c.Config = &rest.Config{
		Host: c.APIServerURL, BearerToken: c.AdminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
		QPS:             -1, // no client-side throttling against a private apiserver
	}
	hdr := map[string]string{"Authorization": "Bearer " + c.AdminToken}
	return c.waitHTTP(ctx, c.apiserver, c.APIServerURL+"/readyz", &tls.Config{RootCAs: pool}, 300*time.Second, hdr)
}

func (c *Cluster) startControllerManager(ctx context.Context, binDir string) error {
	path, err := requireBinary(binDir, "kube-controller-manager")
	if err != nil {
		return err
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	args := []string{
		"--kubeconfig=" + c.KubeconfigPath,
		"--controllers=" + strings.Join(append([]string{"garbage-collector-controller", "serviceaccount-controller", "namespace-controller"}, c.opts.ExtraControllers...), ","),
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--concurrent-gc-syncs=5",
		// For serviceaccount-token-controller and root-ca-cert-publisher when ExtraControllers
		// name them: token Secrets and kube-root-ca.crt carry the apiserver's CA.
		"--service-account-private-key-file=" + filepath.Join(c.Dir, "pki", "sa.key"),
		"--root-ca-file=" + filepath.Join(c.Dir, "pki", "apiserver.crt"),
	}
	if gates := featureGateFlag(c.opts.FeatureGates); gates != "" {
		args = append(args, "--feature-gates="+gates)
	}
	args = append(args, c.opts.ControllerManagerArgs...)
	c.kcm = &process{name: "kube-controller-manager", path: path, args: args, log: filepath.Join(c.Dir, "kube-controller-manager.log")}
	if err := c.kcm.start(); err != nil {
		return err
	}
	// Ready once the serviceaccount controller has created the default ServiceAccount.
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	return c.poll(ctx, c.kcm, 300*time.Second, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

func (c *Cluster) waitHTTP(ctx context.Context, p *process, url string, tlsConfig *tls.Config, timeout time.Duration, headers ...map[string]string) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	defer client.CloseIdleConnections()
	// last is what the latest probe saw, so that a timeout says why (a TLS error, a failing
	// readiness check) instead of only that it timed out.
	var last string
	err := c.poll(ctx, p, timeout, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		for _, h := range headers {
			for k, v := range h {
				req.Header.Set(k, v)
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return true, nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		last = fmt.Sprintf("%s: %s", resp.Status, body)
		return false, nil
	})
	if err != nil && last != "" {
		return fmt.Errorf("%w; the last probe of %s: %s", err, url, last)
	}
	return err
}

// waitForCertificate returns the PEM file at path once it holds a certificate. A server
// writes the file with create-then-write, so it can be seen empty or half written; a
// pool built from such a read trusts nothing and every TLS probe fails until the timeout.
func waitForCertificate(path string, exited func() bool, timeout time.Duration) ([]byte, error) {
	deadline := time.Now().Add(timeout)
	for {
		data, err := os.ReadFile(path)
		if err == nil && wholeCertificates(data) {
			return data, nil
		}
		if exited() || time.Now().After(deadline) {
			return nil, fmt.Errorf("no certificate in %s (read error: %v)", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// wholeCertificates says whether data is one or more complete PEM certificates and nothing
// else: a file cut off in its second block is not done yet.
func wholeCertificates(data []byte) bool {
	n := 0
	for rest := data; ; n++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return n > 0 && len(bytes.TrimSpace(rest)) == 0
		}
		if _, err := x509.ParseCertificate(block.Bytes); block.Type != "CERTIFICATE" || err != nil {
			return false
		}
	}
}

// poll waits for cond, failing early when the process died.
func (c *Cluster) poll(ctx context.Context, p *process, timeout time.Duration, cond wait.ConditionWithContextFunc) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("%s exited: %v", p.name, p.err)
		}
		return cond(ctx)
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", p.name, err)
	}
	return nil
}

func (c *Cluster) writeKubeconfig() error {
	c.KubeconfigPath = filepath.Join(c.Dir, "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["grove"] = &clientcmdapi.Cluster{Server: c.APIServerURL, CertificateAuthorityData: c.Config.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: c.AdminToken}
	cfg.Contexts["grove"] = &clientcmdapi.Context{Cluster: "grove", AuthInfo: "admin"}
	cfg.CurrentContext = "grove"
	return clientcmd.WriteToFile(*cfg, c.KubeconfigPath)
}

// pidFileName lists the pids of the running processes, one per line, for cluster-down.
const pidFileName = "pids"

func (c *Cluster) writePIDFile() error {
	var lines []string
	for _, p := range c.processes() {
		lines = append(lines, strconv.Itoa(p.pid()))
	}
	return os.WriteFile(filepath.Join(c.Dir, pidFileName), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

func (c *Cluster) processes() []*process {
	var ps []*process
	// Stop order: programs using the apiserver first, etcd last.
	all := append(append([]*process{}, c.extra...), c.kwok, c.kcm, c.apiserver, c.etcd)
	for _, p := range all {
		if p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// PIDs returns the pids of the running control-plane processes.
func (c *Cluster) PIDs() []int {
	var pids []int
	for _, p := range c.processes() {
		if !p.exited() {
			pids = append(pids, p.pid())
		}
	}
	return pids
}

// Stop stops every process (controller-manager, apiserver, etcd) and removes a temporary Dir.
func (c *Cluster) Stop() error {
	var errs []error
	for _, p := range c.processes() {
		errs = append(errs, p.stop(5*time.Second))
	}
	if c.tempDir && os.Getenv("GROVE_KEEP_CLUSTER_DIR") == "" {
		errs = append(errs, os.RemoveAll(c.Dir))
	}
	return errors.Join(errs...)
}

// RestartAPIServer stops kube-apiserver and starts it again on the same address, e.g. to test
// clients that must survive an apiserver outage. down is called while it is stopped.
func (c *Cluster) RestartAPIServer(ctx context.Context, down func()) error {
	if err := c.apiserver.stop(10 * time.Second); err != nil {
		return err
	}
	if down != nil {
		down()
	}
	c.apiserver = &process{name: "kube-apiserver", path: c.apiserver.path, args: c.apiserverArgs, log: c.apiserver.log}
	if err := c.apiserver.start(); err != nil {
		return err
	}
	if err := c.waitAPIServer(ctx); err != nil {
		return err
	}
	return c.writePIDFile()
}

// LogTail returns the last lines of every process log, for failure messages.
func (c *Cluster) LogTail(lines int) string {
	var b strings.Builder
	for _, p := range c.processes() {
		data, err := os.ReadFile(p.log)
		if err != nil {
			continue
		}
		all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(all) > lines {
			all = all[len(all)-lines:]
		}
		fmt.Fprintf(&b, "--- %s (%s) ---\n%s\n", p.name, p.log, strings.Join(all, "\n"))
	}
	return b.String()
}

// CreateNamespace creates a namespace and waits for its default ServiceAccount, which pod
// creation needs (the ServiceAccount admission plugin is on).
func (c *Cluster) CreateNamespace(ctx context.Context, name string) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if c.kcm == nil {
		return nil
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

func featureGateFlag(gates map[string]bool) string {
	var parts []string
	for k, v := range gates {
		parts = append(parts, fmt.Sprintf("%s=%t", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func writeServiceAccountKeys(dir string) (keyPath, pubPath string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	keyPath, pubPath = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return "", "", err
	}
	return keyPath, pubPath, os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

// Process is a program started next to the control plane (e.g. grove-operator); it is stopped
// with the control plane and dies with its owner like the control-plane processes.
type Process struct{ p *process }

// StartProcess runs a program with the given arguments and environment (added to the
// current one), logging to <Dir>/<name>.log.
func (c *Cluster) StartProcess(name, path string, args, env []string) (*Process, error) {
	p := &process{name: name, path: path, args: args, env: env, log: filepath.Join(c.Dir, name+".log")}
	if err := p.start(); err != nil {
		return nil, err
	}
	c.extra = append(c.extra, p)
	return &Process{p: p}, c.writePIDFile()
}

// Stop sends SIGTERM, then SIGKILL after grace.
func (p *Process) Stop(grace time.Duration) error { return p.p.stop(grace) }

// Kill sends SIGKILL at once (for crash tests).
func (p *Process) Kill() error {
	if p.p.exited() {
		return nil
	}
	_ = syscall.Kill(-p.p.pid(), syscall.SIGKILL)
	<-p.p.done
	return nil
}

// Exited reports whether the process has ended, and its error.
func (p *Process) Exited() (bool, error) { return p.p.exited(), p.p.err }

// PID is the process id.
func (p *Process) PID() int { return p.p.pid() }

// LogPath is the process's log file.
func (p *Process) LogPath() string { return p.p.log }
