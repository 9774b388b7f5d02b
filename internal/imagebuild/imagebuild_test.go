package imagebuild

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeBin(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o755))
	return p
}

func spec(t *testing.T, amd64, arm64 string) Spec {
	dir := t.TempDir()
	return Spec{
		Binary: "grove-operator",
		Binaries: map[string]string{
			"linux/arm64": writeBin(t, dir, "arm64/grove-operator", arm64),
			"linux/amd64": writeBin(t, dir, "amd64/grove-operator", amd64),
		},
		Labels:  map[string]string{"org.opencontainers.image.version": "v1.2.3"},
		Created: time.Unix(1700000000, 0),
	}
}

func digest(t *testing.T, s Spec) v1.Hash {
	t.Helper()
	idx, err := Build(s)
	require.NoError(t, err)
	d, err := idx.Digest()
	require.NoError(t, err)
	return d
}

func TestSameInputsGiveTheSameDigest(t *testing.T) {
	a := digest(t, spec(t, "amd64 binary", "arm64 binary"))
	// Built again from copies in other directories, at another wall-clock time.
	b := digest(t, spec(t, "amd64 binary", "arm64 binary"))
	assert.Equal(t, a, b)

	assert.NotEqual(t, a, digest(t, spec(t, "amd64 binary!", "arm64 binary")), "a changed binary changes the digest")
	relabelled := spec(t, "amd64 binary", "arm64 binary")
	relabelled.Labels = map[string]string{"org.opencontainers.image.version": "v1.2.4"}
	assert.NotEqual(t, a, digest(t, relabelled), "a changed label changes the digest")
}

func TestImagesAreNonRootWithTheBinaryAsEntrypoint(t *testing.T) {
	s := spec(t, "amd64 binary", "arm64 binary")
	idx, err := Build(s)
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 2)
	for i, want := range []string{"amd64", "arm64"} {
		desc := im.Manifests[i]
		require.NotNil(t, desc.Platform)
		assert.Equal(t, "linux", desc.Platform.OS)
		assert.Equal(t, want, desc.Platform.Architecture)
		img, err := idx.Image(desc.Digest)
		require.NoError(t, err)
		cfg, err := img.ConfigFile()
		require.NoError(t, err)
		assert.Equal(t, want, cfg.Architecture)
		assert.Equal(t, []string{"/grove-operator"}, cfg.Config.Entrypoint)
		assert.Equal(t, "65532:65532", cfg.Config.User)
		assert.Equal(t, "v1.2.3", cfg.Config.Labels["org.opencontainers.image.version"])
		assert.Equal(t, s.Created.UTC(), cfg.Created.Time.UTC())

		files := map[string]*tar.Header{}
		contents := map[string]string{}
		rc := mutate.Extract(img)
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			files[strings.TrimSuffix(h.Name, "/")] = h
			b, _ := io.ReadAll(tr)
			contents[strings.TrimSuffix(h.Name, "/")] = string(b)
		}
		require.NoError(t, rc.Close())
		require.Contains(t, files, "grove-operator")
		assert.Equal(t, want+" binary", contents["grove-operator"], "each platform carries its own binary")
		assert.EqualValues(t, 0o755, files["grove-operator"].Mode&0o777)
		assert.Contains(t, contents["etc/passwd"], "nonroot:x:65532:65532:")
		assert.Equal(t, NonRootUID, files["home/nonroot"].Uid)
		assert.EqualValues(t, 0o1777, files["tmp"].Mode&0o7777)
	}
}

func TestOCIArchiveIsReproducibleAndNamed(t *testing.T) {
	s := spec(t, "amd64 binary", "arm64 binary")
	idx, err := Build(s)
	require.NoError(t, err)
	dir := t.TempDir()
	sum := func(name string) [32]byte {
		out := filepath.Join(dir, name)
		require.NoError(t, WriteOCIArchive(idx, "localhost/grove/grove-operator:v1.2.3", "v1.2.3", s.Created, out))
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		return sha256.Sum256(b)
	}
	assert.Equal(t, sum("a.tar"), sum("b.tar"), "the archive bytes are reproducible too")

	// Unpack and read it back as an OCI layout: one named index, the one built.
	unpacked := t.TempDir()
	f, err := os.Open(filepath.Join(dir, "a.tar"))
	require.NoError(t, err)
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		p := filepath.Join(unpacked, h.Name)
		if h.Typeflag == tar.TypeDir {
			require.NoError(t, os.MkdirAll(p, 0o755))
			continue
		}
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	lp, err := layout.FromPath(unpacked)
	require.NoError(t, err)
	top, err := lp.ImageIndex()
	require.NoError(t, err)
	im, err := top.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1)
	assert.Equal(t, "localhost/grove/grove-operator:v1.2.3", im.Manifests[0].Annotations["io.containerd.image.name"])
	want, err := idx.Digest()
	require.NoError(t, err)
	assert.Equal(t, want, im.Manifests[0].Digest)
	raw, err := json.Marshal(im)
	require.NoError(t, err)
	assert.Contains(t, string(raw), "v1.2.3")
}
