// Package imagebuild assembles Grove's container images from static binaries without a
// container engine: a multi-platform OCI image index whose images hold a minimal root
// filesystem (passwd/group for the non-root user, /tmp) and one binary as the entrypoint.
// Every timestamp comes from the caller and every tar header is normalised, so the same
// binaries and inputs always give the same digests.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRootUID is the user (and group) the images run as, the same id distroless' "nonroot" uses.
const NonRootUID = 65532

// Spec describes one image.
type Spec struct {
	// Binary is the file name of the program, placed at /<Binary> and used as the entrypoint.
	Binary string
	// Binaries maps each platform ("linux/amd64") to the static binary built for it.
	Binaries map[string]string
	// Labels become the image config's labels (org.opencontainers.image.*).
	Labels map[string]string
	// Created stamps the config, history and every file (SOURCE_DATE_EPOCH).
	Created time.Time
}

// Build returns the OCI image index with one image per platform, in platform order.
func Build(spec Spec) (v1.ImageIndex, error) {
	if spec.Binary == "" || len(spec.Binaries) == 0 {
		return nil, fmt.Errorf("imagebuild: a binary name and at least one platform are required")
	}
	platforms := make([]string, 0, len(spec.Binaries))
	for p := range spec.Binaries {
		platforms = append(platforms, p)
	}
	sort.Strings(platforms)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		plat, err := v1.ParsePlatform(p)
		if err != nil {
			return nil, fmt.Errorf("imagebuild: platform %q: %w", p, err)
		}
		img, err := image(spec, *plat, spec.Binaries[p])
		if err != nil {
			return nil, fmt.Errorf("imagebuild: %s for %s: %w", spec.Binary, p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
	}
	return idx, nil
}

func image(spec Spec, plat v1.Platform, binaryPath string) (v1.Image, error) {
	bin, err := os.ReadFile(binaryPath)
	if err != nil {
		return nil, err
	}
	created := spec.Created.UTC().Truncate(time.Second)
	base, err := layer(created, baseFiles())
	if err != nil {
		return nil, err
	}
	program, err := layer(created, []file{{name: spec.Binary, mode: 0o755, data: bin}})
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "grove imagebuild: non-root user, /tmp", Comment: "base"}},
		mutate.Addendum{Layer: program, History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "grove imagebuild: /" + spec.Binary}},
	)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Created = v1.Time{Time: created}
	cfg.OS, cfg.Architecture, cfg.Variant = plat.OS, plat.Architecture, plat.Variant
	cfg.Config = v1.Config{
		Entrypoint: []string{"/" + spec.Binary},
		User:       fmt.Sprintf("%d:%d", NonRootUID, NonRootUID),
		WorkingDir: "/",
		Env:        []string{"PATH=/", "HOME=/home/nonroot"},
		Labels:     spec.Labels,
	}
	return mutate.ConfigFile(img, cfg)
}

type file struct {
	name     string
	mode     int64
	data     []byte
	dir      bool
	uid, gid int
}

func baseFiles() []file {
	return []file{
		{name: "etc", dir: true, mode: 0o755},
		{name: "etc/passwd", mode: 0o644, data: []byte(fmt.Sprintf(
			"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRootUID, NonRootUID))},
		{name: "etc/group", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", NonRootUID))},
		{name: "home", dir: true, mode: 0o755},
		{name: "home/nonroot", dir: true, mode: 0o700, uid: NonRootUID, gid: NonRootUID},
		{name: "tmp", dir: true, mode: 0o1777},
	}
}

// layer writes files into a tar with normalised headers (fixed time, numeric owners only).
func layer(created time.Time, files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.gid, ModTime: created, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, f.name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// WriteOCIArchive writes idx as an OCI image layout tarball naming it ref (for
// `ctr images import` and `skopeo copy oci-archive:`), with normalised tar headers.
func WriteOCIArchive(idx v1.ImageIndex, ref, tag string, created time.Time, out string) error {
	dir, err := os.MkdirTemp(filepath.Dir(out), ".oci-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	// containerd names imported images by io.containerd.image.name; the OCI annotation
	// carries the tag as the image-spec asks.
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          ref,
		"org.opencontainers.image.ref.name": tag,
	})); err != nil {
		return err
	}
	return tarDir(dir, created.UTC().Truncate(time.Second), out)
}

func tarDir(dir string, created time.Time, out string) error {
	var names []string
	if err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	}); err != nil {
		return err
	}
	sort.Strings(names)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(n)))
		if err != nil {
			return err
		}
		h := &tar.Header{Name: n, Mode: 0o644, ModTime: created, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: fi.Size()}
		if fi.IsDir() {
			h.Name, h.Mode, h.Typeflag, h.Size = path.Clean(n)+"/", 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.IsDir() {
			data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(n)))
			if err != nil {
				return err
			}
			if _, err := tw.Write(data); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
