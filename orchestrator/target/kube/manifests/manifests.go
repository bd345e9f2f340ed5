// Package manifests renders manifests/base, the kustomize base equivalent
// to what the Kubernetes targets apply, from the same builders (package
// spec, package bootstrap): its test fails when the two drift, and
// `WAFSWEEP_UPDATE_MANIFESTS=1 go test ./orchestrator/target/kube/manifests`
// rewrites the files. The overlays (kind, gke) and the waf component are
// written by hand on top.
package manifests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/wafsweep/wafsweep/orchestrator/target/kube/bootstrap"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/spec"
)

// Image is the placeholder the overlays replace with kustomize's images.
const Image = "wafsweep-pod"

// Options of the base: the spec defaults in namespace wafsweep.
func Options() spec.Options {
	return spec.Options{Namespace: "wafsweep", Image: Image, PullPolicy: corev1.PullIfNotPresent}.Defaults()
}

// Files renders the base: file name -> content.
func Files(wafTier string) (map[string][]byte, error) {
	o := Options()
	files := map[string][]byte{}
	add := func(name string, objs ...any) error {
		var out []byte
		for i, obj := range objs {
			j, err := json.Marshal(obj)
			if err != nil {
				return err
			}
			y, err := yaml.JSONToYAML(j)
			if err != nil {
				return err
			}
			if i > 0 {
				out = append(out, []byte("---\n")...)
			}
			out = append(out, y...)
		}
		files[name] = append([]byte("# Generated from orchestrator/target/kube/spec by package manifests: do not edit.\n"), out...)
		return nil
	}
	envoy := spec.EnvoyDeployment(o, "", 1, "")
	// kustomize's configMapGenerator names the ConfigMap after its content
	// and rewrites this reference: the same role as the orchestrator's
	// hash-named ConfigMap and template annotation.
	tmpl := envoy.Spec.Template
	for i := range tmpl.Spec.Volumes {
		if v := &tmpl.Spec.Volumes[i]; v.ConfigMap != nil {
			name := "envoy-bootstrap"
			v.ConfigMap.Name = &name
		}
	}
	delete(tmpl.Annotations, spec.AnnotationBootstrapHash)
	for _, f := range []struct {
		name string
		objs []any
	}{
		{"namespace.yaml", []any{spec.Namespace(o)}},
		{"cgroup-agent.yaml", []any{spec.AgentDaemonSet(o)}},
		{"backend.yaml", []any{spec.BackendDeployment(o, ""), spec.BackendService(o)}},
		{"fortio.yaml", []any{spec.FortioDeployment(o)}},
		{"envoy.yaml", []any{envoy}},
	} {
		if err := add(f.name, f.objs...); err != nil {
			return nil, err
		}
	}
	backendHost := fmt.Sprintf("%s.%s.svc.cluster.local", spec.Backend, o.Namespace)
	vanilla, err := bootstrap.Build(bootstrap.Options{ListenHost: "0.0.0.0", ListenPort: int(o.Ports.EnvoyListen), AdminPort: int(o.Ports.EnvoyAdmin),
		BackendHost: backendHost, BackendPort: int(o.Ports.Backend)})
	if err != nil {
		return nil, err
	}
	files["envoy.json"] = vanilla.JSON
	waf, err := bootstrap.Build(bootstrap.Options{ListenHost: "0.0.0.0", ListenPort: int(o.Ports.EnvoyListen), AdminPort: int(o.Ports.EnvoyAdmin),
		BackendHost: backendHost, BackendPort: int(o.Ports.Backend),
		WAFConfigJSON: fmt.Sprintf(`{"directives":["Include %s"]}`, wafTier), ModulePath: spec.ModulePath, AuditLogDir: spec.WAFLogDir})
	if err != nil {
		return nil, err
	}
	files["../components/waf/envoy-waf.json"] = waf.JSON
	return files, nil
}

// Write writes the rendered files under baseDir.
func Write(baseDir string, files map[string][]byte) error {
	for name, content := range files {
		path := filepath.Join(baseDir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return err
		}
	}
	return nil
}
