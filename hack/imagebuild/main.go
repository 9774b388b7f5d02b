// imagebuild writes Grove's OCI images (grove-operator, which is also the startup-waiter init
// image, and grove-scheduler) as OCI image-layout tarballs from binaries already built per
// platform under -bindir/<os>_<arch>/. `make images` runs it; no container engine is needed.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ai-dynamo/grove/internal/imagebuild"
)

var descriptions = map[string]string{
	"grove-operator":  "Grove operator: PodCliqueSet controllers, admission webhooks and the startup waiter",
	"grove-scheduler": "Grove scheduler: kube-scheduler with Grove's gang, topology and DRA plugins",
}

func main() {
	registry := flag.String("registry", "localhost/grove", "image repository prefix: images are <registry>/<name>:<version>")
	version := flag.String("version", "", "Grove version, used as the tag and the version label")
	revision := flag.String("revision", "", "source revision (git commit) for the revision label")
	epoch := flag.Int64("source-date-epoch", 0, "creation time of every file and config, in Unix seconds")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "comma-separated platforms")
	binDir := flag.String("bindir", "bin/images", "directory holding <os>_<arch>/<binary>")
	outDir := flag.String("out", "bin/images", "directory the <name>.oci.tar files are written to")
	flag.Parse()
	if err := run(*registry, *version, *revision, time.Unix(*epoch, 0), strings.Split(*platforms, ","), *binDir, *outDir); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(registry, version, revision string, created time.Time, platforms []string, binDir, outDir string) error {
	if version == "" {
		return fmt.Errorf("-version is required")
	}
	for _, name := range []string{"grove-operator", "grove-scheduler"} {
		bins := map[string]string{}
		for _, p := range platforms {
			bins[p] = filepath.Join(binDir, strings.ReplaceAll(p, "/", "_"), name)
		}
		idx, err := imagebuild.Build(imagebuild.Spec{
			Binary:   name,
			Binaries: bins,
			Created:  created,
			Labels: map[string]string{
				"org.opencontainers.image.title":       name,
				"org.opencontainers.image.description": descriptions[name],
				"org.opencontainers.image.version":     version,
				"org.opencontainers.image.revision":    revision,
				"org.opencontainers.image.created":     created.UTC().Format(time.RFC3339),
				"org.opencontainers.image.licenses":    "Apache-2.0",
			},
		})
		if err != nil {
			return err
		}
		ref := fmt.Sprintf("%s/%s:%s", strings.TrimSuffix(registry, "/"), name, version)
		out := filepath.Join(outDir, name+".oci.tar")
		if err := imagebuild.WriteOCIArchive(idx, ref, version, created, out); err != nil {
			return err
		}
		d, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s@%s -> %s\n", ref, d, out)
	}
	return nil
}
