package image

import (
	"archive/tar"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/spec"
)

// sources are the real Envoy and module (make test builds them) and a
// freshly built pod binary.
func sources(t *testing.T) Sources {
	t.Helper()
	root, err := envoyproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	envoy, envoyErr := envoyproc.FindBinary()
	module := os.Getenv("CORAZAWAF_MODULE")
	if module == "" {
		module = filepath.Join(root, "build", "libcorazawaf.so")
	}
	_, moduleErr := os.Stat(module)
	if envoyErr != nil || moduleErr != nil {
		if os.Getenv("WAFSWEEP_E2E") == "required" {
			t.Fatalf("Envoy and the module are needed: %v %v", envoyErr, moduleErr)
		}
		t.Skipf("Envoy and the module are needed (make test builds them): %v %v", envoyErr, moduleErr)
	}
	pod := filepath.Join(t.TempDir(), "wafsweep-pod")
	build := exec.Command("go", "build", "-o", pod, "./orchestrator/target/kube/cmd/wafsweep-pod")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building wafsweep-pod: %v\n%s", err, out)
	}
	return Sources{Envoy: envoy, Module: module, PodBinary: pod}
}

// An image for a plan with waf-accelerated also holds the accelerated
// build, every library it loads (Hyperscan and libstdc++ with the
// Hyperscan engine) and the compiled databases, root-owned and read-only
// as the module's cache check requires.
func TestImageCarriesTheAcceleratedBuild(t *testing.T) {
	accelerated := os.Getenv("CORAZAWAF_ACCEL_MODULE")
	if accelerated == "" {
		t.Skip("CORAZAWAF_ACCEL_MODULE is not set (make test sets it)")
	}
	cache := t.TempDir()
	db := filepath.Join(cache, "0123456789abcdef0123456789abcdef.hsdb")
	if err := os.WriteFile(db, []byte("a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := Sources{Envoy: "/bin/true", Module: "/bin/true", PodBinary: "/bin/true", AcceleratedModule: accelerated, HyperscanCache: cache}
	files, err := Files(src)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]File{}
	for _, f := range files {
		byPath[f.To] = f
	}
	wantDB := path.Join(spec.HyperscanCacheDir, filepath.Base(db))
	if f, ok := byPath[spec.AcceleratedModulePath]; !ok || f.From != accelerated {
		t.Errorf("no accelerated build at %s: %+v", spec.AcceleratedModulePath, f)
	}
	if f, ok := byPath[wantDB]; !ok || f.From != db || f.Mode != 0o644 {
		t.Errorf("the database at %s: %+v, want from %s, mode 0644", wantDB, f, db)
	}
	needed, err := Needed(accelerated)
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range needed {
		if !slices.ContainsFunc(files, func(f File) bool { return path.Base(f.To) == lib }) {
			t.Errorf("the accelerated build needs %s; the image lacks it", lib)
		}
	}
	if _, err := Files(Sources{Envoy: "/bin/true", Module: "/bin/true", PodBinary: "/bin/true", HyperscanCache: filepath.Join(cache, "missing")}); err == nil {
		t.Error("a named Hyperscan cache that does not exist was accepted")
	}
}

// The image holds Envoy, the module and the pod binary plus the libraries
// Envoy loads, and Envoy runs from it with nothing else: checked by
// unpacking the layer and running Envoy chrooted into it (as root).
func TestImageRunsEnvoyFromItsOwnFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the pod binary")
	}
	src := sources(t)
	built, err := Build(src, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	again, err := Build(src, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if again.Tag != built.Tag {
		t.Errorf("the same files gave tags %s and %s: the build is not reproducible", built.Tag, again.Tag)
	}
	cfg, err := built.Pause.ConfigFile()
	if err != nil || strings.Join(cfg.Config.Entrypoint, " ") != spec.PodBinaryPath+" pause" || cfg.Architecture != "amd64" {
		t.Errorf("pause image config %+v %v", cfg, err)
	}
	layers, err := built.Image.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rootfs := t.TempDir()
	names := untar(t, rc, rootfs)
	for _, want := range []string{"usr/local/bin/envoy", "usr/local/lib/wafsweep/libcorazawaf.so", "usr/local/bin/wafsweep-pod", "lib64/ld-linux-x86-64.so.2", "tmp/"} {
		if !names[want] {
			t.Errorf("image lacks %s", want)
		}
	}
	if !names["lib/x86_64-linux-gnu/libc.so.6"] && !names["usr/lib/x86_64-linux-gnu/libc.so.6"] {
		t.Error("image lacks libc")
	}
	archive := filepath.Join(t.TempDir(), "image.tar")
	if err := WriteTarball(archive, map[string]v1.Image{"wafsweep.local/wafsweep-pod:" + built.Tag: built.Image}); err != nil {
		t.Fatal(err)
	}
	if _, err := tarball.ImageFromPath(archive, nil); err != nil {
		t.Errorf("the archive does not read back: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Log("not root: Envoy not run from the unpacked image")
		return
	}
	cmd := exec.Command("/usr/local/bin/envoy", "--version")
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: rootfs}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "1.40") {
		t.Fatalf("Envoy in the image: %v\n%s", err, out)
	}
}

func untar(t *testing.T, r io.Reader, dir string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names[h.Name] = true
		target := filepath.Join(dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			os.MkdirAll(target, os.FileMode(h.Mode)&os.ModePerm)
		case tar.TypeReg:
			os.MkdirAll(filepath.Dir(target), 0o755)
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, os.FileMode(h.Mode)&os.ModePerm)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(f, tr)
			f.Close()
		}
	}
}
