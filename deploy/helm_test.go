package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

const chartDir = "helm/tt-media-server"

// helmBinary finds helm: $HELM, this module's bin/helm (built by scripts/check-deploy.sh),
// then PATH. Tests that need it skip when there is none.
func helmBinary(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	if abs, err := filepath.Abs(filepath.Join("bin", "helm")); err == nil {
		if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
			return abs
		}
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	t.Skip("helm not found: run scripts/check-deploy.sh (it builds helm v3.22.0 into deploy/bin) or set HELM")
	return ""
}

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, helmBinary(t), args...)
	home := t.TempDir() // keep helm away from the user's config and caches
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// serviceMonitor is the part of the Prometheus Operator's ServiceMonitor the chart renders,
// for a strict decode (its Go types live in a module we do not want here).
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
		} `json:"endpoints"`
	} `json:"spec"`
}

type rendered struct {
	deployment  *appsv1.Deployment
	service     *corev1.Service
	configMap   *corev1.ConfigMap
	secret      *corev1.Secret
	hpa         *autoscalingv2.HorizontalPodAutoscaler
	monitor     *serviceMonitor
	pvc         *corev1.PersistentVolumeClaim
	kinds       []string
	configNames map[string]bool
}

// decodeManifests splits `helm template` output and strictly decodes each document into
// its k8s.io/api type: unknown fields and wrong types fail.
func decodeManifests(t *testing.T, out string) rendered {
	t.Helper()
	var r rendered
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(out, -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(doc, "")) == "" {
			continue
		}
		var tm metav1.TypeMeta
		require.NoError(t, yaml.Unmarshal([]byte(doc), &tm))
		key := tm.APIVersion + "/" + tm.Kind
		r.kinds = append(r.kinds, key)
		var obj any
		switch key {
		case "apps/v1/Deployment":
			r.deployment = &appsv1.Deployment{}
			obj = r.deployment
		case "v1/Service":
			r.service = &corev1.Service{}
			obj = r.service
		case "v1/ConfigMap":
			r.configMap = &corev1.ConfigMap{}
			obj = r.configMap
		case "v1/Secret":
			r.secret = &corev1.Secret{}
			obj = r.secret
		case "autoscaling/v2/HorizontalPodAutoscaler":
			r.hpa = &autoscalingv2.HorizontalPodAutoscaler{}
			obj = r.hpa
		case "monitoring.coreos.com/v1/ServiceMonitor":
			r.monitor = &serviceMonitor{}
			obj = r.monitor
		case "v1/PersistentVolumeClaim":
			r.pvc = &corev1.PersistentVolumeClaim{}
			obj = r.pvc
		default:
			t.Fatalf("unexpected kind %s in:\n%s", key, doc)
		}
		require.NoError(t, yaml.UnmarshalStrict([]byte(doc), obj), "strict decode of %s", key)
	}
	return r
}

var envTagRE = regexp.MustCompile(`envconfig:"([A-Z0-9_]+)"`)

// serverEnvVars are the variables the server reads (config/env.go, config/auth.go...).
func serverEnvVars(t *testing.T) map[string]bool {
	t.Helper()
	vars := map[string]bool{}
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "config", "*.go"))
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range envTagRE.FindAllStringSubmatch(string(src), -1) {
			vars[m[1]] = true
		}
	}
	require.Contains(t, vars, "SERVICE_PORT", "config/env.go no longer looks as expected")
	return vars
}

func TestHelmLint(t *testing.T) {
	out, err := helm(t, "lint", "--strict", chartDir, "--set", "auth.apiKey=k")
	require.NoError(t, err, out)
	out, err = helm(t, "lint", "--strict", chartDir, "--set", "auth.apiKey=k,mock=true")
	require.NoError(t, err, out)
}

func TestHelmTemplate(t *testing.T) {
	envVars := serverEnvVars(t)
	tests := []struct {
		name     string
		set      []string
		mock     bool
		kinds    int
		check    func(t *testing.T, r rendered)
		existing string
	}{
		{
			name: "galaxy sdxl on 24 chips", set: []string{"auth.apiKey=k"}, kinds: 4,
			check: func(t *testing.T, r rendered) {
				require.Equal(t, "tt-sdxl-trace", r.configMap.Data["MODEL_RUNNER"])
				require.Equal(t, 24, strings.Count(r.configMap.Data["DEVICE_IDS"], "("))
				require.Equal(t, "k", r.secret.StringData["API_KEY"])
				require.NotContains(t, r.secret.StringData, "JWT_SECRET")
				require.Equal(t, "45", r.configMap.Data["SHUTDOWN_GRACE_SECONDS"])
			},
		},
		{
			name: "sd3.5 fast preset", kinds: 4,
			set: []string{"auth.apiKey=k", "model.name=stable-diffusion-3.5-large", "device.type=galaxy",
				"device.sd35Fast=true", "device.setDeviceIds=false", "model.runner=tt-sd3.5"},
			check: func(t *testing.T, r rendered) {
				require.Equal(t, "stable-diffusion-3.5-large", r.configMap.Data["MODEL"])
				require.Equal(t, "galaxy", r.configMap.Data["DEVICE"])
				require.Equal(t, "true", r.configMap.Data["SD_3_5_FAST"])
				for _, key := range []string{"DEVICE_IDS", "IS_GALAXY", "MAX_BATCH_SIZE"} {
					require.NotContains(t, r.configMap.Data, key, "the preset sets it; the server lets the environment win")
				}
			},
		},
		{
			name: "whisper, hugepages as a resource, device plugin, monitor, hpa, jwt", kinds: 6,
			set: []string{"auth.apiKey=k", "auth.jwtSecret=s", "auth.hfToken=h", "model.runner=tt-whisper",
				"device.ids=(24)\\,(25)\\,(26)", "hugepages.mode=resource", "hugepages.amount=3Gi",
				"device.privileged=false", "device.resources.tenstorrent\\.com/wormhole=3",
				"serviceMonitor.enabled=true", "autoscaling.enabled=true", "env.NUM_INFERENCE_STEPS=30"},
			check: func(t *testing.T, r rendered) {
				require.Equal(t, "(24),(25),(26)", r.configMap.Data["DEVICE_IDS"])
				require.Equal(t, "30", r.configMap.Data["NUM_INFERENCE_STEPS"])
				require.Equal(t, "s", r.secret.StringData["JWT_SECRET"])
				c := r.deployment.Spec.Template.Spec.Containers[0]
				for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
					hp := rl["hugepages-1Gi"]
					require.Equal(t, "3Gi", hp.String())
					dev := rl["tenstorrent.com/wormhole"]
					require.Equal(t, "3", dev.String())
				}
				require.False(t, *c.SecurityContext.Privileged)
				vols := map[string]corev1.Volume{}
				for _, v := range r.deployment.Spec.Template.Spec.Volumes {
					vols[v.Name] = v
				}
				require.NotNil(t, vols["hugepages"].EmptyDir)
				require.Equal(t, corev1.StorageMedium("HugePages-1Gi"), vols["hugepages"].EmptyDir.Medium)
				require.Nil(t, r.deployment.Spec.Replicas, "the HPA owns replicas")
				require.Equal(t, r.deployment.Name, r.hpa.Spec.ScaleTargetRef.Name)
				require.Equal(t, "tt_media_server_queue_depth", r.hpa.Spec.Metrics[0].Pods.Metric.Name)
				require.Equal(t, "http", r.monitor.Spec.Endpoints[0].Port)
				require.Equal(t, "/metrics", r.monitor.Spec.Endpoints[0].Path)
				sel, err := metav1.LabelSelectorAsSelector(&r.monitor.Spec.Selector)
				require.NoError(t, err)
				require.True(t, sel.Matches(labels.Set(r.service.Labels)), "ServiceMonitor selects the Service")
			},
		},
		{
			name: "existing secret", set: []string{"auth.existingSecret=my-keys"}, kinds: 3, existing: "my-keys",
		},
		{
			name: "video: replicas on PostgreSQL and a shared volume", mock: true, kinds: 5,
			set: []string{"auth.apiKey=k", "mock=true", "model.runner=tt-wan2.2", "replicaCount=3", "video.enabled=true",
				"video.database.url=postgres://jobs:pw@pg:5432/jobs", "video.persistence.storageClass=nfs"},
			check: func(t *testing.T, r rendered) {
				require.Equal(t, int32(3), *r.deployment.Spec.Replicas)
				require.Equal(t, "postgres://jobs:pw@pg:5432/jobs", r.secret.StringData["JOB_DATABASE_URL"], "the database URL is a secret")
				require.NotContains(t, r.configMap.Data, "JOB_DATABASE_URL")
				require.NotContains(t, r.configMap.Data, "JOB_DATABASE_PATH", "replicas do not use SQLite")
				require.Equal(t, "/var/lib/tt-media-server/videos", r.configMap.Data["TT_VIDEO_OUTPUT_DIR"])
				require.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, r.pvc.Spec.AccessModes)
				require.Equal(t, "nfs", *r.pvc.Spec.StorageClassName)
				spec := r.deployment.Spec.Template.Spec
				require.Len(t, spec.Volumes, 1)
				require.Equal(t, r.pvc.Name, spec.Volumes[0].PersistentVolumeClaim.ClaimName, "every replica mounts the one claim")
				c := spec.Containers[0]
				require.Equal(t, []corev1.VolumeMount{{Name: "videos", MountPath: "/var/lib/tt-media-server"}}, c.VolumeMounts)
				require.Equal(t, "metadata.name", c.Env[0].ValueFrom.FieldRef.FieldPath, "JOB_REPLICA_ID is the pod's name")
				require.Equal(t, "JOB_REPLICA_ID", c.Env[0].Name)
				require.Equal(t, int64(65532), *spec.SecurityContext.FSGroup, "the non-root server can write the volume")
			},
		},
		{
			name: "video: database URL from a Secret you manage, existing claim, hardware", kinds: 4,
			set: []string{"auth.apiKey=k", "model.runner=tt-wan2.2", "replicaCount=2", "video.enabled=true",
				"video.database.existingSecret=pg-creds", "video.database.existingSecretKey=url", "video.persistence.existingClaim=shared-videos"},
			check: func(t *testing.T, r rendered) {
				require.Nil(t, r.pvc, "an existing claim: no PVC rendered")
				require.NotContains(t, r.secret.StringData, "JOB_DATABASE_URL")
				c := r.deployment.Spec.Template.Spec.Containers[0]
				env := map[string]corev1.EnvVar{}
				for _, e := range c.Env {
					env[e.Name] = e
				}
				ref := env["JOB_DATABASE_URL"].ValueFrom.SecretKeyRef
				require.Equal(t, "pg-creds", ref.Name)
				require.Equal(t, "url", ref.Key)
				claims := map[string]string{}
				for _, v := range r.deployment.Spec.Template.Spec.Volumes {
					if v.PersistentVolumeClaim != nil {
						claims[v.Name] = v.PersistentVolumeClaim.ClaimName
					}
				}
				require.Equal(t, map[string]string{"videos": "shared-videos"}, claims)
				mounts := map[string]string{}
				for _, m := range c.VolumeMounts {
					mounts[m.Name] = m.MountPath
				}
				require.Equal(t, "/var/lib/tt-media-server", mounts["videos"])
				require.Equal(t, "/dev/tenstorrent", mounts["tenstorrent"])
			},
		},
		{
			name: "video: one replica keeps SQLite on the volume", mock: true, kinds: 5,
			set: []string{"auth.apiKey=k", "mock=true", "model.runner=tt-wan2.2", "video.enabled=true"},
			check: func(t *testing.T, r rendered) {
				require.Equal(t, "/var/lib/tt-media-server/jobs.db", r.configMap.Data["JOB_DATABASE_PATH"])
				require.NotContains(t, r.secret.StringData, "JOB_DATABASE_URL")
			},
		},
		{
			name: "mock mode", set: []string{"auth.apiKey=k", "mock=true"}, mock: true, kinds: 4,
			check: func(t *testing.T, r rendered) {
				require.Equal(t, "5", r.configMap.Data["MOCK_DEVICES_COUNT"])
				require.NotContains(t, r.configMap.Data, "DEVICE_IDS")
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", "rel", chartDir}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			out, err := helm(t, args...)
			require.NoError(t, err, out)
			r := decodeManifests(t, out)
			require.Len(t, r.kinds, tc.kinds, "rendered %v", r.kinds)
			checkCommon(t, r, tc.mock, tc.existing, envVars)
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func checkCommon(t *testing.T, r rendered, mock bool, existingSecret string, envVars map[string]bool) {
	t.Helper()
	d, svc, cm := r.deployment, r.service, r.configMap
	require.NotNil(t, d)
	require.NotNil(t, svc)
	require.NotNil(t, cm)
	for _, name := range []string{d.Name, svc.Name, cm.Name} {
		require.Empty(t, validation.IsDNS1123Subdomain(name), name)
	}

	// Selector, pod labels and Service agree.
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	require.NoError(t, err)
	podLabels := labels.Set(d.Spec.Template.Labels)
	require.True(t, sel.Matches(podLabels), "deployment selector must match its pod template")
	require.True(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels), "service must select the pods")

	spec := d.Spec.Template.Spec
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	require.Regexp(t, `^[^:]+:[^:]+$`, c.Image, "image has a tag")
	require.NotContains(t, c.Image, ":latest")
	if mock {
		require.True(t, strings.HasSuffix(c.Image, "-sim"), c.Image)
	} else {
		require.True(t, strings.HasSuffix(c.Image, "-ttnn"), c.Image)
	}

	// Ports and probes.
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	require.Contains(t, ports, "http")
	require.Equal(t, cm.Data["SERVICE_PORT"], strconv.Itoa(int(ports["http"])), "SERVICE_PORT matches the container port")
	require.Equal(t, "http", svc.Spec.Ports[0].TargetPort.String())
	for name, probe := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		require.NotNil(t, probe, name)
		require.NotNil(t, probe.HTTPGet, name)
		require.Equal(t, "http", probe.HTTPGet.Port.String(), name)
	}
	require.Equal(t, "/tt-liveness", c.StartupProbe.HTTPGet.Path)
	require.Equal(t, "/tt-liveness", c.LivenessProbe.HTTPGet.Path)
	require.Equal(t, "/health", c.ReadinessProbe.HTTPGet.Path)
	require.NotNil(t, spec.TerminationGracePeriodSeconds)
	require.Greater(t, *spec.TerminationGracePeriodSeconds, int64(30))

	// Resources.
	require.NotEmpty(t, c.Resources.Requests)
	require.NotEmpty(t, c.Resources.Limits)
	mem := c.Resources.Limits[corev1.ResourceMemory]
	require.False(t, mem.IsZero(), "memory limit")

	// Env comes from the rendered ConfigMap and the Secret; every key is one the server reads.
	require.Len(t, c.EnvFrom, 2)
	require.Equal(t, cm.Name, c.EnvFrom[0].ConfigMapRef.Name)
	if existingSecret != "" {
		require.Nil(t, r.secret)
		require.Equal(t, existingSecret, c.EnvFrom[1].SecretRef.Name)
	} else {
		require.NotNil(t, r.secret)
		require.Equal(t, r.secret.Name, c.EnvFrom[1].SecretRef.Name)
		for k := range r.secret.StringData {
			require.True(t, envVars[k], "secret key %s is not a server variable", k)
		}
	}
	for k := range cm.Data {
		require.True(t, envVars[k], "ConfigMap key %s is not read by the server (config/*.go)", k)
		require.NotContains(t, []string{"API_KEY", "JWT_SECRET", "HF_TOKEN"}, k, "secret in ConfigMap")
	}

	// Devices and isolation.
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v
	}
	for name := range mounts {
		require.Contains(t, vols, name, "mount of an undeclared volume")
	}
	if mock {
		for _, v := range spec.Volumes { // no host paths in mock mode; only the video results' claim
			require.NotNil(t, v.PersistentVolumeClaim, "mock mode mounts %s", v.Name)
		}
		require.True(t, *spec.SecurityContext.RunAsNonRoot)
		require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
		require.Equal(t, appsv1.RollingUpdateDeploymentStrategyType, d.Spec.Strategy.Type)
		return
	}
	require.Equal(t, "/dev/tenstorrent", mounts["tenstorrent"])
	require.Equal(t, "/dev/tenstorrent", vols["tenstorrent"].HostPath.Path)
	require.Equal(t, "/dev/hugepages-1G", mounts["hugepages"])
	require.Equal(t, appsv1.RecreateDeploymentStrategyType, d.Spec.Strategy.Type, "chips cannot be shared during a rollout")
	aff := spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	require.Len(t, aff, 1)
	require.Equal(t, "kubernetes.io/hostname", aff[0].TopologyKey)
	asel, err := metav1.LabelSelectorAsSelector(aff[0].LabelSelector)
	require.NoError(t, err)
	require.True(t, asel.Matches(podLabels), "anti-affinity keeps two pods of the release off one host")
}

func TestHelmTemplateRefuses(t *testing.T) {
	tests := []struct {
		name string
		set  []string
		want string
	}{
		{"no api key", nil, "auth.apiKey is required"},
		{"model without device", []string{"auth.apiKey=k", "model.name=stable-diffusion-3.5-large"}, "model.name needs device.type"},
		{"device without model", []string{"auth.apiKey=k", "device.type=galaxy"}, "device.type needs model.name"},
		{"secret through env", []string{"auth.apiKey=k", "env.API_KEY=x"}, "env.API_KEY"},
		{"bad hugepages mode", []string{"auth.apiKey=k", "hugepages.mode=both"}, "hugepages.mode must be"},
		{"video replicas without a database", []string{"auth.apiKey=k", "video.enabled=true", "replicaCount=2"}, "needs video.database.url"},
		{"video autoscaling without a database", []string{"auth.apiKey=k", "video.enabled=true", "autoscaling.enabled=true"}, "needs video.database.url"},
		{"video database not postgres", []string{"auth.apiKey=k", "video.enabled=true", "video.database.url=mysql://x"}, "postgres:// or postgresql://"},
		{"video replicas on a ReadWriteOnce claim", []string{"auth.apiKey=k", "video.enabled=true", "replicaCount=2",
			"video.database.url=postgres://x", "video.persistence.accessMode=ReadWriteOnce"}, "must be ReadWriteMany"},
		{"video database URL with an existing auth secret", []string{"auth.existingSecret=s", "video.enabled=true",
			"video.database.url=postgres://x"}, "video.database.existingSecret"},
		{"database URL through env", []string{"auth.apiKey=k", "env.JOB_DATABASE_URL=postgres://x"}, "env.JOB_DATABASE_URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", "rel", chartDir}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			out, err := helm(t, args...)
			require.Error(t, err, out)
			require.Contains(t, out, tc.want)
		})
	}
}

// The strict decode is what catches typos: prove it does on a misspelt field.
func TestStrictDecodeCatchesTypos(t *testing.T) {
	bad := "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  ports:\n    - name: http\n      prot: 8000\n"
	require.ErrorContains(t, yaml.UnmarshalStrict([]byte(bad), &corev1.Service{}), `unknown field "prot"`)
	wrongType := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replicas: \"two\"\n"
	require.Error(t, yaml.UnmarshalStrict([]byte(wrongType), &appsv1.Deployment{}))
}
