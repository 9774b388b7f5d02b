package realnode

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/ai-dynamo/grove/internal/imagebuild"
)

// pauseScript keeps the sandbox alive until the kubelet stops it (a shell as PID 1 ignores
// TERM unless it traps it).
const pauseScript = "trap 'exit 0' TERM INT; while true; do sleep 3600 & wait $!; done"

// importBusyboxImages builds the sandbox image and the workload image from this machine's
// static busybox and imports both: nothing is pulled from a registry.
func (n *Node) importBusyboxImages(ctx context.Context) error {
	bb, err := os.ReadFile(busyboxPath)
	if err != nil {
		return err
	}
	for _, img := range []struct {
		ref        string
		entrypoint []string
	}{
		{PauseImage, []string{"/bin/busybox", "sh", "-c", pauseScript}},
		{BusyboxImage, []string{"/bin/sh"}},
	} {
		idx, err := busyboxIndex(bb, img.entrypoint)
		if err != nil {
			return err
		}
		out := n.path(fileName(img.ref) + ".oci.tar")
		if err := imagebuild.WriteOCIArchive(idx, img.ref, "busybox", time.Unix(0, 0), out); err != nil {
			return err
		}
		if err := n.ImportImage(ctx, out); err != nil {
			return err
		}
	}
	return nil
}

func fileName(ref string) string {
	b := []byte(ref)
	for i, c := range b {
		if c == '/' || c == ':' {
			b[i] = '_'
		}
	}
	return string(b)
}

func busyboxIndex(busybox []byte, entrypoint []string) (v1.ImageIndex, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, h := range []*tar.Header{
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch},
		{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(busybox)), ModTime: epoch},
		{Name: "bin/sh", Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777, ModTime: epoch},
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777, ModTime: epoch},
	} {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Name == "bin/busybox" {
			if _, err := tw.Write(busybox); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON), layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Config = v1.Config{Entrypoint: entrypoint, Env: []string{"PATH=/bin"}}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, err
	}
	plat := &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}}), nil
}
