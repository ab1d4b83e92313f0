//go:build platform

// Package deploy checks the deploy artefacts of deploy/ as far as this machine allows (no
// Kubernetes cluster and no container engine runs here): the Kubernetes manifests decode
// strictly into the Kubernetes API types (k8s.io/api; an unknown or misspelt field fails)
// and keep the cluster's invariants; the compose file, the Dockerfile and the systemd units
// hold what deploy/README.md says they do. These are unit-tier tests: files only.
package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	yamlv3 "go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/service"
	"github.com/shopmind/shopmind/services"
)

const (
	deployDir     = "../../deploy"
	secretName    = "shopmind-secrets"
	secretKey     = "jwt-secret"
	configMapName = "shopmind-config"
)

// targets are every --target but all: one process kind each.
func targets() []string {
	var names []string
	for _, d := range services.All() {
		names = append(names, d.Name)
	}
	return slices.DeleteFunc(app.Targets(names), func(t string) bool { return t == app.TargetAll })
}

// manifests are the decoded objects of deploy/k8s, by kind.
type manifests struct {
	deployments  []appsv1.Deployment
	statefulSets []appsv1.StatefulSet
	services     []corev1.Service
	configMaps   []corev1.ConfigMap
	secrets      []corev1.Secret
	hpas         []autoscalingv2.HorizontalPodAutoscaler
	files        []string
}

// strict decodes one YAML document into out, refusing unknown fields.
func strict[T any](doc []byte, out *[]T) error {
	var v T
	if err := yaml.UnmarshalStrict(doc, &v); err != nil {
		return err
	}
	*out = append(*out, v)
	return nil
}

func loadManifests(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(deployDir, "k8s", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/k8s: %v", err)
	}
	var m manifests
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		m.files = append(m.files, filepath.Base(f))
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yamlv3.NewDecoder(bytes.NewReader(raw))
		for i := 0; ; i++ {
			var node yamlv3.Node
			if err := dec.Decode(&node); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			doc, err := yamlv3.Marshal(&node)
			if err != nil {
				t.Fatal(err)
			}
			var head struct{ APIVersion, Kind string }
			if err := yaml.Unmarshal(doc, &head); err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			switch head.APIVersion + " " + head.Kind {
			case "apps/v1 Deployment":
				err = strict(doc, &m.deployments)
			case "apps/v1 StatefulSet":
				err = strict(doc, &m.statefulSets)
			case "v1 Service":
				err = strict(doc, &m.services)
			case "v1 ConfigMap":
				err = strict(doc, &m.configMaps)
			case "v1 Secret":
				err = strict(doc, &m.secrets)
			case "autoscaling/v2 HorizontalPodAutoscaler":
				err = strict(doc, &m.hpas)
			default:
				err = fmt.Errorf("unexpected %s %s (add it to the test)", head.APIVersion, head.Kind)
			}
			if err != nil {
				t.Fatalf("%s document %d (%s): %v", f, i, head.Kind, err)
			}
		}
	}
	return m
}

func find[T any](items []T, name func(T) string, want string) (T, bool) {
	for _, it := range items {
		if name(it) == want {
			return it, true
		}
	}
	var zero T
	return zero, false
}

func envValue(c corev1.Container, name string) (corev1.EnvVar, int) {
	for i, e := range c.Env {
		if e.Name == name {
			return e, i
		}
	}
	return corev1.EnvVar{}, -1
}

// TestKubernetesManifests: every target has its Deployment running `serve --target=<t>`
// from one image; every container reads the one JWT secret from the one Secret and the
// shared ConfigMap; gateways have /healthz liveness and /readyz readiness on their HTTP
// port, services grpc.health.v1 probes on their gRPC port and advertise their pod IP;
// resources, an HPA and a non-root security context for each; Services select pods that
// exist; every ConfigMap variable is documented; the grace period outlasts the shutdown
// timeout; kustomization.yaml lists every file.
func TestKubernetesManifests(t *testing.T) {
	m := loadManifests(t)
	cm, ok := find(m.configMaps, func(c corev1.ConfigMap) string { return c.Name }, configMapName)
	if !ok {
		t.Fatalf("ConfigMap %s missing", configMapName)
	}
	secret, ok := find(m.secrets, func(s corev1.Secret) string { return s.Name }, secretName)
	if !ok {
		t.Fatalf("Secret %s missing", secretName)
	}
	if _, ok := secret.StringData[secretKey]; !ok {
		t.Fatalf("Secret %s has no key %s", secretName, secretKey)
	}
	var docs []byte // the README's configuration table and the edge's, which it points to
	for _, f := range []string{"../../README.md", "../../gateway/EDGE.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b...)
	}
	for k := range cm.Data {
		if !strings.Contains(string(docs), "`"+k+"`") {
			t.Errorf("ConfigMap variable %s is documented in neither README.md nor gateway/EDGE.md", k)
		}
	}
	shutdown, err := time.ParseDuration(cm.Data["SHOPMIND_SHUTDOWN_TIMEOUT"])
	if err != nil {
		t.Fatalf("SHOPMIND_SHUTDOWN_TIMEOUT in the ConfigMap: %v", err)
	}
	portOf := func(addr string) int32 {
		var p int32
		_, _ = fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &p)
		return p
	}
	httpPort, grpcPort := portOf(cm.Data["SHOPMIND_HTTP_ADDR"]), portOf(cm.Data["SHOPMIND_GRPC_ADDR"])
	if httpPort == 0 || grpcPort == 0 || cm.Data["SHOPMIND_ETCD_ENDPOINTS"] == "" {
		t.Fatalf("ConfigMap: SHOPMIND_HTTP_ADDR, SHOPMIND_GRPC_ADDR and SHOPMIND_ETCD_ENDPOINTS must be set: %v", cm.Data)
	}

	var image string
	for _, target := range targets() {
		name := "shopmind-" + target
		d, ok := find(m.deployments, func(d appsv1.Deployment) string { return d.Name }, name)
		if !ok {
			t.Errorf("target %s: no Deployment %s", target, name)
			continue
		}
		spec := d.Spec.Template.Spec
		if len(spec.Containers) != 1 {
			t.Errorf("%s: want one container, got %d", name, len(spec.Containers))
			continue
		}
		c := spec.Containers[0]
		if !slices.Equal(c.Args, []string{"serve", "--target=" + target}) {
			t.Errorf("%s: args %v, want serve --target=%s", name, c.Args, target)
		}
		if image == "" {
			image = c.Image
		} else if c.Image != image {
			t.Errorf("%s: image %s, the others run %s", name, c.Image, image)
		}
		for k, v := range d.Spec.Selector.MatchLabels {
			if d.Spec.Template.Labels[k] != v {
				t.Errorf("%s: selector %s=%s does not match its pod template", name, k, v)
			}
		}
		// The one secret, from the one Secret; the shared ConfigMap.
		if e, _ := envValue(c, "SHOPMIND_JWT_SECRET"); e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
			e.ValueFrom.SecretKeyRef.Name != secretName || e.ValueFrom.SecretKeyRef.Key != secretKey {
			t.Errorf("%s: SHOPMIND_JWT_SECRET must come from Secret %s key %s, got %+v", name, secretName, secretKey, e)
		}
		if len(c.EnvFrom) != 1 || c.EnvFrom[0].ConfigMapRef == nil || c.EnvFrom[0].ConfigMapRef.Name != configMapName {
			t.Errorf("%s: envFrom must be ConfigMap %s", name, configMapName)
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				if _, ok := secret.StringData[e.ValueFrom.SecretKeyRef.Key]; !ok || e.ValueFrom.SecretKeyRef.Name != secretName {
					t.Errorf("%s: %s reads %s/%s, which the Secret does not define", name, e.Name, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
				}
			}
		}
		// Probes.
		if target == app.TargetGateway {
			if !hasPort(c, "http", httpPort) {
				t.Errorf("%s: no container port http %d (SHOPMIND_HTTP_ADDR)", name, httpPort)
			}
			checkHTTPProbe(t, name+" liveness", c.LivenessProbe, "/healthz")
			checkHTTPProbe(t, name+" readiness", c.ReadinessProbe, "/readyz")
		} else {
			if !hasPort(c, "grpc", grpcPort) {
				t.Errorf("%s: no container port grpc %d (SHOPMIND_GRPC_ADDR)", name, grpcPort)
			}
			for what, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
				if p == nil || p.GRPC == nil || p.GRPC.Port != grpcPort || (p.GRPC.Service != nil && *p.GRPC.Service != "") {
					t.Errorf("%s %s: want a grpc.health.v1 probe of the whole server on port %d, got %+v", name, what, grpcPort, p)
				}
			}
			podIP, i := envValue(c, "POD_IP")
			adv, j := envValue(c, "SHOPMIND_GRPC_ADVERTISE_ADDR")
			if i < 0 || podIP.ValueFrom == nil || podIP.ValueFrom.FieldRef == nil || podIP.ValueFrom.FieldRef.FieldPath != "status.podIP" ||
				j < i || adv.Value != fmt.Sprintf("$(POD_IP):%d", grpcPort) {
				t.Errorf("%s: must advertise $(POD_IP):%d in etcd, POD_IP from status.podIP defined first", name, grpcPort)
			}
		}
		// Resources, security, shutdown.
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := c.Resources.Requests[r]; !ok {
				t.Errorf("%s: no %s request", name, r)
			}
			if _, ok := c.Resources.Limits[r]; !ok {
				t.Errorf("%s: no %s limit", name, r)
			}
		}
		if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			t.Errorf("%s: the pod must run as non-root", name)
		}
		if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: want a read-only root file system and no privilege escalation", name)
		}
		if g := spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= shutdown {
			t.Errorf("%s: terminationGracePeriodSeconds must exceed SHOPMIND_SHUTDOWN_TIMEOUT %v", name, shutdown)
		}
		// Autoscaling.
		h, ok := find(m.hpas, func(h autoscalingv2.HorizontalPodAutoscaler) string { return h.Spec.ScaleTargetRef.Name }, name)
		switch {
		case !ok:
			t.Errorf("%s: no HorizontalPodAutoscaler", name)
		case h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || h.Spec.MaxReplicas < *h.Spec.MinReplicas:
			t.Errorf("%s: HPA %s: bad target or bounds %+v", name, h.Name, h.Spec)
		case (target == app.TargetGateway || target == "tenant") && *h.Spec.MinReplicas < 2:
			t.Errorf("%s: the edge and login path keep at least two replicas", name)
		}
	}
	if len(m.deployments) != len(targets()) {
		t.Errorf("%d Deployments for %d targets", len(m.deployments), len(targets()))
	}
	// Services select pods that exist.
	for _, s := range m.services {
		matched := false
		for _, d := range m.deployments {
			matched = matched || labelsMatch(s.Spec.Selector, d.Spec.Template.Labels)
		}
		for _, ss := range m.statefulSets {
			matched = matched || labelsMatch(s.Spec.Selector, ss.Spec.Template.Labels)
		}
		if !matched {
			t.Errorf("Service %s selects no pod template", s.Name)
		}
	}
	if _, ok := find(m.services, func(s corev1.Service) string { return s.Name }, "shopmind-gateway"); !ok {
		t.Error("no Service in front of the gateways")
	}
	// kustomization.yaml lists every manifest.
	var kust struct{ Resources []string }
	raw, err := os.ReadFile(filepath.Join(deployDir, "k8s", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &kust); err != nil {
		t.Fatal(err)
	}
	slices.Sort(kust.Resources)
	if !slices.Equal(kust.Resources, m.files) {
		t.Errorf("kustomization.yaml resources %v, files %v", kust.Resources, m.files)
	}
}

func hasPort(c corev1.Container, name string, port int32) bool {
	return slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == name && p.ContainerPort == port })
}

func checkHTTPProbe(t *testing.T, what string, p *corev1.Probe, path string) {
	t.Helper()
	if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "http" {
		t.Errorf("%s: want GET %s on port http, got %+v", what, path, p)
	}
}

func labelsMatch(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// compose is the part of the compose specification deploy/compose.yaml uses; decoding
// refuses any other field, so a typo fails here rather than in docker compose.
type compose struct {
	Name     string                    `yaml:"name"`
	XEnv     yamlv3.Node               `yaml:"x-shopmind-env"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]yamlv3.Node    `yaml:"volumes"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       *composeBuild     `yaml:"build"`
	Command     []string          `yaml:"command"`
	Hostname    string            `yaml:"hostname"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test        []string `yaml:"test"`
		Interval    string   `yaml:"interval"`
		Timeout     string   `yaml:"timeout"`
		Retries     int      `yaml:"retries"`
		StartPeriod string   `yaml:"start_period"`
	} `yaml:"healthcheck"`
	Restart string `yaml:"restart"`
	Ulimits map[string]struct {
		Soft int `yaml:"soft"`
		Hard int `yaml:"hard"`
	} `yaml:"ulimits"`
}

type composeBuild struct {
	Context    string `yaml:"context"`
	Dockerfile string `yaml:"dockerfile"`
}

// TestCompose: PostgreSQL, ClickHouse and etcd, and a process for every target (two
// gateways, two tenant replicas), from the one image built by deploy/Dockerfile, sharing
// one required JWT secret and etcd, each advertising its own host name, each with a health
// check; services start in the order their demo data needs.
func TestCompose(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(deployDir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	dec := yamlv3.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	for _, name := range []string{"postgres", "clickhouse", "etcd"} {
		if _, ok := c.Services[name]; !ok {
			t.Errorf("compose.yaml: no %s", name)
		}
	}
	running := map[string]int{}
	for name, s := range c.Services {
		if len(s.Command) < 2 || s.Command[0] != "serve" {
			continue
		}
		target, ok := strings.CutPrefix(s.Command[1], "--target=")
		if !ok {
			t.Errorf("%s: command %v", name, s.Command)
			continue
		}
		running[target]++
		if s.Build == nil || s.Build.Dockerfile != "deploy/Dockerfile" {
			t.Errorf("%s: must be built from deploy/Dockerfile", name)
		}
		if got := s.Environment["SHOPMIND_JWT_SECRET"]; !strings.HasPrefix(got, "${SHOPMIND_JWT_SECRET:?") {
			t.Errorf("%s: SHOPMIND_JWT_SECRET must be the one required ${SHOPMIND_JWT_SECRET:?...}, got %q", name, got)
		}
		if !strings.Contains(s.Environment["SHOPMIND_ETCD_ENDPOINTS"], "etcd:2379") {
			t.Errorf("%s: not on etcd", name)
		}
		if _, ok := s.DependsOn["etcd"]; !ok {
			t.Errorf("%s: must depend on etcd", name)
		}
		if s.Healthcheck == nil || len(s.Healthcheck.Test) < 3 || s.Healthcheck.Test[1] != "/usr/local/bin/shopmind" || s.Healthcheck.Test[2] != "probe" {
			t.Errorf("%s: health check must be shopmind probe, got %+v", name, s.Healthcheck)
		}
		if target != app.TargetGateway && s.Environment["SHOPMIND_GRPC_ADVERTISE_ADDR"] != s.Hostname+":9090" {
			t.Errorf("%s: must advertise its host name %q:9090, got %q", name, s.Hostname, s.Environment["SHOPMIND_GRPC_ADVERTISE_ADDR"])
		}
	}
	for _, target := range targets() {
		want := 1
		if target == app.TargetGateway || target == "tenant" {
			want = 2
		}
		if running[target] < want {
			t.Errorf("compose.yaml: %d processes of %s, want %d", running[target], target, want)
		}
	}
	// The demo seeds run in the order of the service list: each service waits for the one
	// before it to be healthy.
	defs := services.All()
	for i := 1; i < len(defs); i++ {
		s := c.Services[defs[i].Name]
		if dep, ok := s.DependsOn[serviceName(c, defs[i-1])]; !ok || dep.Condition != "service_healthy" {
			t.Errorf("compose.yaml: %s must depend on %s being healthy", defs[i].Name, serviceName(c, defs[i-1]))
		}
	}
}

// serviceName is the compose service running def's target first (tenant-1 for tenant).
func serviceName(c compose, def service.Def) string {
	if _, ok := c.Services[def.Name]; ok {
		return def.Name
	}
	return def.Name + "-1"
}

// TestDockerfile: a static binary (CGO off), a minimal base, a non-root user.
func TestDockerfile(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(deployDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(s, -1)
	if len(froms) < 2 || !strings.HasPrefix(froms[len(froms)-1][1], "gcr.io/distroless/static") {
		t.Errorf("the final stage must be distroless/static, got %v", froms)
	}
	for _, want := range []string{"CGO_ENABLED=0", "USER 65532:65532", `ENTRYPOINT ["/usr/local/bin/shopmind"]`} {
		if !strings.Contains(s, want) {
			t.Errorf("Dockerfile lacks %s", want)
		}
	}
}

// TestSystemdUnits: a template unit per target (shopmind@<target>) running the binary make
// install puts in place, with the environment files deploy/README.md describes.
func TestSystemdUnits(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(deployDir, "systemd", "shopmind@.service"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	for _, want := range []string{
		"ExecStart=/usr/local/bin/shopmind serve --target=%i",
		"EnvironmentFile=/etc/shopmind/shopmind.env",
		"EnvironmentFile=-/etc/shopmind/%i.env",
		"KillSignal=SIGTERM",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("shopmind@.service lacks %q", want)
		}
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^install:`).Match(mk) || !strings.Contains(string(mk), "shopmind@.service") {
		t.Error("Makefile: install must install the binary and shopmind@.service")
	}
}
