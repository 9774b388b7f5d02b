package cluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// ModuleRoot walks up from the working directory to the directory holding go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// BinDir is where the control-plane binaries live: $GROVE_BIN_DIR, else <module root>/bin.
func BinDir() (string, error) {
	if d := os.Getenv("GROVE_BIN_DIR"); d != "" {
		return d, nil
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin"), nil
}

// CRDDir is the directory of Grove's generated CRDs.
func CRDDir() (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "config", "crd"), nil
}

// ThirdPartyCRDDir holds the CRDs of KAI, Koordinator, Volcano and scheduler-plugins that
// backends are tested against (kept in the repository so tests need nothing outside it).
func ThirdPartyCRDDir() (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "config", "thirdparty-crds"), nil
}

func requireBinary(dir, name string) (string, error) {
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found in %s: run `make k8s-bins` first", name, dir)
	}
	return p, nil
}
