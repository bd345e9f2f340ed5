package spec

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// decode turns an apply configuration into the API type it describes.
func decode[T any](t *testing.T, ac any) T {
	t.Helper()
	b, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func testOptions() Options {
	return Options{Namespace: "ns", SweepID: "s1", Image: "example.test/wafsweep-pod:1"}.Defaults()
}

// Every pod the targets run is Guaranteed; the measured containers get
// whole cores; the agent stays fractional.
func TestEveryPodIsGuaranteed(t *testing.T) {
	o := testOptions()
	cases := []struct {
		name      string
		pod       corev1.PodSpec
		exclusive string
		cores     int64
	}{
		{"envoy", decode[appsv1.Deployment](t, EnvoyDeployment(o, "abc", 1, "")).Spec.Template.Spec, Envoy, 2},
		{"backend", decode[appsv1.Deployment](t, BackendDeployment(o, "")).Spec.Template.Spec, Backend, 1},
		{"fortio", decode[appsv1.Deployment](t, FortioDeployment(o)).Spec.Template.Spec, Fortio, 2},
		{"agent", decode[appsv1.DaemonSet](t, AgentDaemonSet(o)).Spec.Template.Spec, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if p := GuaranteedProblems(&c.pod, c.exclusive); len(p) > 0 {
				t.Fatalf("not Guaranteed: %v", p)
			}
			cpu := c.pod.Containers[0].Resources.Limits[corev1.ResourceCPU]
			if c.cores > 0 && cpu.MilliValue() != c.cores*1000 {
				t.Errorf("CPU %s, want %d whole cores", cpu.String(), c.cores)
			}
			if c.cores == 0 && cpu.MilliValue()%1000 == 0 {
				t.Errorf("CPU %s: the agent must stay fractional, in the shared pool", cpu.String())
			}
			if c.pod.AutomountServiceAccountToken == nil || *c.pod.AutomountServiceAccountToken {
				t.Error("the pod mounts an API token it does not need")
			}
		})
	}
}

// GuaranteedProblems catches each way a pod falls out of the class,
// including through an init container.
func TestGuaranteedProblems(t *testing.T) {
	q := resource.MustParse
	ok := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("1Gi")},
	}
	cases := []struct {
		name string
		mod  func(*corev1.PodSpec)
		want string
	}{
		{"fine", func(*corev1.PodSpec) {}, ""},
		{"requests default to limits", func(p *corev1.PodSpec) { p.Containers[0].Resources.Requests = nil }, ""},
		{"no memory limit", func(p *corev1.PodSpec) { delete(p.Containers[0].Resources.Limits, corev1.ResourceMemory) }, "no memory limit"},
		{"cpu request below limit", func(p *corev1.PodSpec) { p.Containers[0].Resources.Requests[corev1.ResourceCPU] = q("1") }, "cpu request 1 differs from limit 2"},
		{"fractional exclusive", func(p *corev1.PodSpec) {
			p.Containers[0].Resources.Requests[corev1.ResourceCPU] = q("1500m")
			p.Containers[0].Resources.Limits[corev1.ResourceCPU] = q("1500m")
		}, "not a whole number of cores"},
		{"init container without limits", func(p *corev1.PodSpec) {
			p.InitContainers = []corev1.Container{{Name: "init"}}
		}, "init container init: no cpu limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := corev1.PodSpec{Containers: []corev1.Container{{Name: "envoy", Resources: *ok.DeepCopy()}}}
			c.mod(&pod)
			got := strings.Join(GuaranteedProblems(&pod, "envoy"), "; ")
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Fatalf("problems %q, want %q", got, c.want)
			}
		})
	}
}

// Envoy: Recreate, one replica, --concurrency equal to its cores, the
// bootstrap's hash on the template and the ConfigMap it names, on the proxy
// pool, away from the load generator.
func TestEnvoyDeployment(t *testing.T) {
	o := testOptions()
	o.Proxy.MilliCPU = 3000
	d := decode[appsv1.Deployment](t, EnvoyDeployment(o, "feedface0123456789", 1, ""))
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || *d.Spec.Replicas != 1 {
		t.Errorf("strategy %s replicas %d", d.Spec.Strategy.Type, *d.Spec.Replicas)
	}
	pod := d.Spec.Template
	if pod.Annotations[AnnotationBootstrapHash] != "feedface0123456789" {
		t.Errorf("template annotations %v", pod.Annotations)
	}
	cmd := strings.Join(pod.Spec.Containers[0].Command, " ")
	if !strings.Contains(cmd, "--concurrency 3") {
		t.Errorf("command %q: want --concurrency 3", cmd)
	}
	if cm := pod.Spec.Volumes[0].ConfigMap; cm == nil || cm.Name != BootstrapConfigMapName("feedface0123456789") {
		t.Errorf("bootstrap volume %+v", pod.Spec.Volumes[0])
	}
	if pod.Spec.NodeSelector[NodeLabelProxy] != "true" {
		t.Errorf("node selector %v", pod.Spec.NodeSelector)
	}
	// The plan's Envoy environment reaches the container, a value with
	// "=" in it whole.
	o.EnvoyEnv = []string{"GOGC=400", "GODEBUG=gctrace=1,madvdontneed=1"}
	env := map[string]string{}
	for _, e := range decode[appsv1.Deployment](t, EnvoyDeployment(o, "x", 1, "")).Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env["GOGC"] != "400" || env["GODEBUG"] != "gctrace=1,madvdontneed=1" || env["CORAZAWAF_HS_CACHE"] != HyperscanCacheDir {
		t.Errorf("Envoy's environment %v", env)
	}
	anti := pod.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(anti) != 1 || anti[0].TopologyKey != "kubernetes.io/hostname" || !strings.Contains(strings.Join(anti[0].LabelSelector.MatchExpressions[0].Values, ","), Fortio) {
		t.Errorf("anti-affinity %+v", anti)
	}
	// A one-node test cluster cannot honour anti-affinity.
	o.SingleNode = true
	if single := decode[appsv1.Deployment](t, EnvoyDeployment(o, "x", 1, "")); single.Spec.Template.Spec.Affinity != nil {
		t.Error("SingleNode keeps the anti-affinity")
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"defaults", func(*Options) {}, ""},
		{"no image", func(o *Options) { o.Image = "" }, "no image"},
		{"fractional proxy", func(o *Options) { o.Proxy.MilliCPU = 1500 }, "whole cores"},
		{"whole-core agent", func(o *Options) { o.Agent.MilliCPU = 1000 }, "fractional"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := testOptions()
			c.mod(&o)
			err := o.Validate()
			if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("Validate() = %v, want %q", err, c.want)
			}
		})
	}
}

// With a certificate, Envoy and the backend mount the run's Secret
// read-only where the bootstrap and the backend's flags name the files,
// the backend serves TLS on its own port beside the clear one, and both
// pods carry the certificate's fingerprint (a new one is a new pod).
// Without it, neither mounts anything.
func TestTLSMountsTheRunsSecret(t *testing.T) {
	o := testOptions()
	secret := decode[corev1.Secret](t, TLSSecret(o, []byte("chain"), []byte("key"), "f1"))
	if secret.Type != corev1.SecretTypeTLS || secret.Name != TLSSecretName || string(secret.Data[corev1.TLSCertKey]) != "chain" ||
		string(secret.Data[corev1.TLSPrivateKeyKey]) != "key" || secret.Annotations[AnnotationTLSFingerprint] != "f1" {
		t.Errorf("secret %+v", secret)
	}
	for _, tc := range []struct {
		name string
		pod  func(fingerprint string) corev1.PodTemplateSpec
	}{
		{"envoy", func(f string) corev1.PodTemplateSpec {
			return decode[appsv1.Deployment](t, EnvoyDeployment(o, "x", 1, f)).Spec.Template
		}},
		{"backend", func(f string) corev1.PodTemplateSpec {
			return decode[appsv1.Deployment](t, BackendDeployment(o, f)).Spec.Template
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod("f1")
			var mounted bool
			for _, m := range pod.Spec.Containers[0].VolumeMounts {
				mounted = mounted || m.MountPath == TLSDir && m.ReadOnly
			}
			var fromSecret bool
			for _, v := range pod.Spec.Volumes {
				fromSecret = fromSecret || v.Secret != nil && v.Secret.SecretName == TLSSecretName && *v.Secret.DefaultMode&0o007 == 0
			}
			if !mounted || !fromSecret || pod.Annotations[AnnotationTLSFingerprint] != "f1" {
				t.Errorf("mounted %v, from the secret unreadable to others %v, annotations %v", mounted, fromSecret, pod.Annotations)
			}
			clear := tc.pod("")
			if len(clear.Spec.Volumes) == len(pod.Spec.Volumes) || clear.Annotations[AnnotationTLSFingerprint] != "" {
				t.Errorf("without a certificate: volumes %+v, annotations %v", clear.Spec.Volumes, clear.Annotations)
			}
		})
	}
	// The load generator writes each TLS step's CA for Fortio: its /tmp
	// is writable on a read-only root.
	loadgen := decode[appsv1.Deployment](t, FortioDeployment(o)).Spec.Template.Spec
	if m := loadgen.Containers[0].VolumeMounts; len(m) != 1 || m[0].MountPath != "/tmp" || m[0].ReadOnly || loadgen.Volumes[0].EmptyDir == nil {
		t.Errorf("load generator mounts %+v, volumes %+v: want an emptyDir at /tmp", m, loadgen.Volumes)
	}
	cmd := strings.Join(decode[appsv1.Deployment](t, BackendDeployment(o, "f1")).Spec.Template.Spec.Containers[0].Command, " ")
	for _, want := range []string{"--listen 0.0.0.0:8080 --http2", "--tls-listen 0.0.0.0:8443", "--tls-cert " + TLSCertFile, "--tls-key " + TLSKeyFile} {
		if !strings.Contains(cmd, want) {
			t.Errorf("backend command %q lacks %q", cmd, want)
		}
	}
}
