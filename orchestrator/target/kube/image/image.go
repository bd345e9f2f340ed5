// Package image builds the Kubernetes targets' OCI image from files on
// this machine, pulling nothing: the Envoy binary the local target runs,
// the corazawaf module (and, for a plan with waf-accelerated, the
// accelerated build with its Hyperscan databases), the static wafsweep-pod
// binary, and the shared libraries Envoy and the modules need, found by
// reading their ELF dynamic sections (Envoy 1.40 is linked against glibc
// only; the accelerated build adds Hyperscan and libstdc++). The image is written
// as a tarball (for `kind load`, `ctr images import`) or pushed to a
// registry the user names.
package image

import (
	"archive/tar"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/wafsweep/wafsweep/orchestrator/target/kube/spec"
)

// Sources are the files on this machine the image is made of.
type Sources struct {
	Envoy     string // e.g. build/envoy (a symlink is followed)
	Module    string // build/libcorazawaf.so
	PodBinary string // build/wafsweep-pod, statically linked
	// AcceleratedModule is build/libcorazawaf-accelerated.so, or "" for an
	// image without it; HyperscanCache is the directory of its compiled
	// databases (the *.hsdb files `make build` writes), or "".
	AcceleratedModule string
	HyperscanCache    string
}

// File is one file of the image.
type File struct {
	From string // path on this machine (symlinks followed)
	To   string // absolute path in the image
	Mode int64
}

// libDirs are searched for a DT_NEEDED library, as the dynamic loader
// does without an ld.so.cache.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}

// Files lists what the image holds: the sources at the paths the pod specs
// use, plus every shared library they load (recursively) and the dynamic
// loader, at the paths the loader looks for them.
func Files(src Sources) ([]File, error) {
	files := []File{
		{From: src.Envoy, To: spec.EnvoyPath, Mode: 0o755},
		{From: src.Module, To: spec.ModulePath, Mode: 0o644},
		{From: src.PodBinary, To: spec.PodBinaryPath, Mode: 0o755},
	}
	if src.AcceleratedModule != "" {
		files = append(files, File{From: src.AcceleratedModule, To: spec.AcceleratedModulePath, Mode: 0o644})
	}
	// Root-owned and written by no one else in the image: the module
	// trusts nothing less (package hyperscan's cache check).
	cache, err := cacheFiles(src.HyperscanCache)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, f := range files {
		if _, err := os.Stat(f.From); err != nil {
			errs = append(errs, fmt.Errorf("image source: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, f := range append([]File(nil), files...) {
		deps, err := sharedDeps(f.From, seen)
		if err != nil {
			return nil, err
		}
		files = append(files, deps...)
	}
	return append(files, cache...), nil
}

// cacheFiles are the Hyperscan databases of dir ("" for none) at the
// image's cache directory.
func cacheFiles(dir string) ([]File, error) {
	if dir == "" {
		return nil, nil
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("image source: the Hyperscan cache: %w", err)
	}
	dbs, err := filepath.Glob(filepath.Join(dir, "*.hsdb"))
	if err != nil {
		return nil, err
	}
	var files []File
	for _, db := range dbs {
		files = append(files, File{From: db, To: path.Join(spec.HyperscanCacheDir, filepath.Base(db)), Mode: 0o644})
	}
	return files, nil
}

// sharedDeps returns the libraries bin needs (not yet in seen) and, for a
// dynamically linked executable, its interpreter.
func sharedDeps(bin string, seen map[string]bool) ([]File, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", bin, err)
	}
	defer f.Close()
	var out []File
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			return nil, err
		}
		interp := strings.TrimRight(string(b), "\x00")
		if !seen[interp] {
			seen[interp] = true
			out = append(out, File{From: interp, To: interp, Mode: 0o755})
		}
	}
	needed, err := f.ImportedLibraries()
	if err != nil {
		// A static binary has no dynamic section.
		return out, nil
	}
	for _, lib := range needed {
		found := ""
		for _, dir := range libDirs {
			if _, err := os.Stat(filepath.Join(dir, lib)); err == nil {
				found = filepath.Join(dir, lib)
				break
			}
		}
		if found == "" {
			return nil, fmt.Errorf("%s needs %s, not found in %v", bin, lib, libDirs)
		}
		if seen[found] {
			continue
		}
		seen[found] = true
		out = append(out, File{From: found, To: found, Mode: 0o755})
		deps, err := sharedDeps(found, seen)
		if err != nil {
			return nil, err
		}
		out = append(out, deps...)
	}
	return out, nil
}

// Needed lists the shared libraries an ELF file names (DT_NEEDED): none
// for a static binary.
func Needed(bin string) ([]string, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", bin, err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		return nil, nil // no dynamic section
	}
	return libs, nil
}

// epoch stamps every entry: the same files make the same layer digest.
var epoch = time.Unix(0, 0).UTC()

// writeLayer writes files as an uncompressed tar to path, with their
// parent directories, /tmp, and a passwd naming nobody.
func writeLayer(path string, files []File) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer out.Close()
	tw := tar.NewWriter(out)
	dirs := map[string]bool{}
	var dirList []string
	for _, f := range files {
		for d := path2dir(f.To); d != "/" && !dirs[d]; d = path2dir(d) {
			dirs[d] = true
			dirList = append(dirList, d)
		}
	}
	dirList = append(dirList, "/etc")
	sort.Strings(dirList)
	for _, d := range dirList {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o755, ModTime: epoch}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: epoch}); err != nil {
		return err
	}
	etc := map[string]string{
		"etc/passwd": "root:x:0:0:root:/:/nonexistent\nnobody:x:65534:65534:nobody:/nonexistent:/nonexistent\n",
		"etc/group":  "root:x:0:\nnogroup:x:65534:\n",
	}
	for _, name := range []string{"etc/group", "etc/passwd"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(etc[name])), ModTime: epoch}); err != nil {
			return err
		}
		if _, err := io.WriteString(tw, etc[name]); err != nil {
			return err
		}
	}
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].To < sorted[j].To })
	for _, f := range sorted {
		if err := addFile(tw, f); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return out.Close()
}

func path2dir(p string) string { return path.Dir(p) }

func addFile(tw *tar.Writer, f File) error {
	in, err := os.Open(f.From) // follows symlinks: the image gets the content
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.To, "/"), Mode: f.Mode, Size: st.Size(), ModTime: epoch}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.Copy(tw, in); err != nil {
		return fmt.Errorf("adding %s: %w", f.From, err)
	}
	return nil
}

// Built is the image and its pause variant (for test nodes that must not
// pull a pause image), sharing one layer.
type Built struct {
	Image v1.Image
	Pause v1.Image
	// Tag derives from the image's digest: the same files, the same tag.
	Tag string
}

// Build makes the image in workDir (which holds the layer file while the
// image is in use).
func Build(src Sources, workDir string) (Built, error) {
	files, err := Files(src)
	if err != nil {
		return Built{}, err
	}
	layerPath := filepath.Join(workDir, "layer.tar")
	if err := writeLayer(layerPath, files); err != nil {
		return Built{}, fmt.Errorf("writing the image layer: %w", err)
	}
	layer, err := tarball.LayerFromFile(layerPath)
	if err != nil {
		return Built{}, err
	}
	img, err := withLayer(layer, nil)
	if err != nil {
		return Built{}, err
	}
	pause, err := withLayer(layer, []string{spec.PodBinaryPath, "pause"})
	if err != nil {
		return Built{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return Built{}, err
	}
	return Built{Image: img, Pause: pause, Tag: "sha-" + digest.Hex[:12]}, nil
}

func withLayer(layer v1.Layer, entrypoint []string) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = "amd64", "linux"
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	cfg.Config.User = "65534:65534"
	cfg.Config.WorkingDir = "/"
	cfg.Config.Entrypoint = entrypoint
	return mutate.ConfigFile(img, cfg)
}

// WriteTarball writes images under their references to one docker-archive
// tarball, which `ctr images import` and kind's image loading accept.
func WriteTarball(path string, images map[string]v1.Image) error {
	refs := map[name.Reference]v1.Image{}
	for ref, img := range images {
		tag, err := name.NewTag(ref)
		if err != nil {
			return fmt.Errorf("image reference %q: %w", ref, err)
		}
		refs[tag] = img
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tarball.MultiRefWrite(refs, f); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// Push uploads img to ref (a registry the user named, e.g. a GKE
// project's Artifact Registry) with the local credentials (docker config,
// gcloud credential helper) and returns the pushed reference by digest,
// which the pods then name.
func Push(ctx context.Context, ref string, img v1.Image) (string, error) {
	tag, err := name.NewTag(ref)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := remote.Write(tag, img, remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	return tag.Context().Digest(digest.String()).String(), nil
}
