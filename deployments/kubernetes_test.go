package deployments

import (
	"bytes"
	"encoding/json"
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

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/pdfexport/pdfexport/internal/platform/config"
)

// kedaCRDs holds the CustomResourceDefinitions of the KEDA release
// kubernetes/autoscaling/keda.yaml is written for (testdata/…/README.md).
const kedaCRDs = "testdata/keda-v2.21.0"

// manifestFiles are every Kubernetes manifest: the base and the two
// autoscaling variants.
func manifestFiles(t *testing.T) []string {
	t.Helper()
	base, _ := filepath.Glob("kubernetes/*.yaml")
	auto, _ := filepath.Glob("kubernetes/autoscaling/*.yaml")
	if len(base) == 0 || len(auto) == 0 {
		t.Fatalf("manifests: %v %v", base, auto)
	}
	return append(base, auto...)
}

// object is one document of a manifest file, as JSON (sigs.k8s.io/yaml's
// strict conversion: duplicate keys refused).
type object struct {
	file       string
	apiVersion string
	kind       string
	name       string
	json       []byte
}

func (o object) String() string { return fmt.Sprintf("%s: %s %s", o.file, o.kind, o.name) }

// splitDocuments cuts a multi-document YAML file at its "---" lines.
func splitDocuments(raw []byte) [][]byte {
	var docs [][]byte
	for doc := range bytes.SplitSeq(raw, []byte("\n---\n")) {
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			docs = append(docs, doc)
		}
	}
	return docs
}

func stripComments(doc []byte) []byte {
	var out []byte
	for line := range bytes.SplitSeq(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' && !bytes.Equal(t, []byte("---")) {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}

func loadObjects(t *testing.T) []object {
	t.Helper()
	var objs []object
	for _, f := range manifestFiles(t) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range splitDocuments(raw) {
			js, err := sigsyaml.YAMLToJSONStrict(doc)
			if err != nil {
				t.Fatalf("%s, document %d: %v", f, i+1, err)
			}
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(js, &head); err != nil {
				t.Fatalf("%s, document %d: %v", f, i+1, err)
			}
			objs = append(objs, object{file: f, apiVersion: head.APIVersion, kind: head.Kind, name: head.Metadata.Name, json: js})
		}
	}
	return objs
}

// strictDecode decodes JSON into v, refusing unknown fields and trailing data.
func strictDecode(js []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("data after the object: %v", err)
	}
	return nil
}

// builtIn are the Kubernetes API types of the kinds the manifests use.
var builtIn = map[string]func() any{
	"apps/v1/Deployment":                     func() any { return &appsv1.Deployment{} },
	"v1/Service":                             func() any { return &corev1.Service{} },
	"v1/ConfigMap":                           func() any { return &corev1.ConfigMap{} },
	"policy/v1/PodDisruptionBudget":          func() any { return &policyv1.PodDisruptionBudget{} },
	"autoscaling/v2/HorizontalPodAutoscaler": func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
}

// kedaSchemas compiles the openAPIV3Schema of every KEDA CRD in kedaCRDs, by
// "apiVersion/Kind", with unknown fields refused: every object schema that
// lists its properties gets additionalProperties: false unless it says
// otherwise or preserves unknown fields (the API server would prune them;
// here they are a typo to report).
func kedaSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(kedaCRDs, "*.yaml"))
	if len(files) == 0 {
		t.Fatalf("no CRDs in %s", kedaCRDs)
	}
	out := map[string]*jsonschema.Schema{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		js, err := sigsyaml.YAMLToJSON(raw)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var crd struct {
			Spec struct {
				Group    string `json:"group"`
				Names    struct{ Kind string }
				Versions []struct {
					Name   string `json:"name"`
					Schema struct {
						OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
					} `json:"schema"`
				} `json:"versions"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(js, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range crd.Spec.Versions {
			closeObjects(v.Schema.OpenAPIV3Schema)
			// The schema's metadata is {type: object}; the API server checks
			// ObjectMeta itself. Here: only the fields ObjectMeta has.
			if props, ok := v.Schema.OpenAPIV3Schema["properties"].(map[string]any); ok {
				props["metadata"] = map[string]any{"type": "object", "additionalProperties": false, "required": []any{"name"},
					"properties": map[string]any{"name": map[string]any{"type": "string"}, "namespace": map[string]any{"type": "string"},
						"labels":      map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
						"annotations": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}}}
			}
			doc, err := roundTrip(v.Schema.OpenAPIV3Schema)
			if err != nil {
				t.Fatal(err)
			}
			c := jsonschema.NewCompiler()
			c.DefaultDraft(jsonschema.Draft4) // OpenAPI 3.0 schemas are close to draft 4
			url := crd.Spec.Group + "/" + v.Name + "/" + crd.Spec.Names.Kind + ".json"
			if err := c.AddResource(url, doc); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			s, err := c.Compile(url)
			if err != nil {
				t.Fatalf("%s, %s: %v", f, v.Name, err)
			}
			out[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Kind] = s
		}
	}
	return out
}

// closeObjects adds additionalProperties: false to every object schema that
// names its properties and neither allows nor preserves others.
func closeObjects(s any) {
	switch v := s.(type) {
	case map[string]any:
		_, hasProps := v["properties"]
		_, hasAdditional := v["additionalProperties"]
		preserve, _ := v["x-kubernetes-preserve-unknown-fields"].(bool)
		if hasProps && !hasAdditional && !preserve {
			v["additionalProperties"] = false
		}
		for _, child := range v {
			closeObjects(child)
		}
	case []any:
		for _, child := range v {
			closeObjects(child)
		}
	}
}

// roundTrip turns a decoded JSON value into what jsonschema wants
// (json.Number numbers).
func roundTrip(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// decodeObject decodes o strictly into its Kubernetes type, or validates it
// against its KEDA CRD; it returns the typed object (nil for KEDA kinds).
func decodeObject(o object, keda map[string]*jsonschema.Schema) (any, error) {
	if mk, ok := builtIn[o.apiVersion+"/"+o.kind]; ok {
		v := mk()
		return v, strictDecode(o.json, v)
	}
	if s, ok := keda[o.apiVersion+"/"+o.kind]; ok {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(o.json))
		if err != nil {
			return nil, err
		}
		return nil, s.Validate(inst)
	}
	return nil, fmt.Errorf("unknown kind %s/%s: add its API type to builtIn", o.apiVersion, o.kind)
}

// TestKubernetesManifests_StrictTypes: every document parses into the real
// Kubernetes API type of its kind (k8s.io/api) with unknown fields refused,
// or validates against KEDA's published CRD schema (also strictly); and a
// misspelt field is caught both ways.
func TestKubernetesManifests_StrictTypes(t *testing.T) {
	keda := kedaSchemas(t)
	objs := loadObjects(t)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.kind]++
		if _, err := decodeObject(o, keda); err != nil {
			t.Errorf("%s: %v", o, err)
		}
	}
	for _, k := range []string{"Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler", "ScaledObject", "TriggerAuthentication"} {
		if kinds[k] == 0 {
			t.Errorf("no %s in the manifests", k)
		}
	}
	// The checks refuse what they should.
	for _, o := range objs {
		var bad object
		switch o.kind {
		case "Deployment", "ScaledObject":
			bad = o
			bad.json = bytes.Replace(o.json, []byte(`"spec":{`), []byte(`"spec":{"replicasCount":3,`), 1)
		default:
			continue
		}
		if _, err := decodeObject(bad, keda); err == nil {
			t.Errorf("%s: an unknown spec field was accepted", o)
		}
	}
}

// deployment returns the Deployment of the manifests named name.
func deployment(t *testing.T, objs []object, name string) *appsv1.Deployment {
	t.Helper()
	for _, o := range objs {
		if o.kind == "Deployment" && o.name == name {
			var d appsv1.Deployment
			if err := strictDecode(o.json, &d); err != nil {
				t.Fatal(err)
			}
			return &d
		}
	}
	t.Fatalf("no Deployment %s", name)
	return nil
}

func envValue(c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// workerDurations are the worker's SHUTDOWN_TIMEOUT and RENDER_TIMEOUT as
// the manifest sets them (the configuration's defaults otherwise).
func workerDurations(t *testing.T, c corev1.Container) (shutdown, render time.Duration) {
	t.Helper()
	var env []string
	for _, name := range []string{"SHUTDOWN_TIMEOUT", "RENDER_TIMEOUT"} {
		if v, ok := envValue(c, name); ok {
			env = append(env, name+"="+v)
		}
	}
	cfg, err := config.Load(env)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.ShutdownTimeout, cfg.RenderTimeout
}

// TestWorkerDeployment_Settings: what docs/CAPACITY.md and docs/DEPLOYMENT.md say
// the worker Deployment does, it does.
func TestWorkerDeployment_Settings(t *testing.T) {
	objs := loadObjects(t)
	d := deployment(t, objs, "pdfexport-worker")
	pod := d.Spec.Template
	if d.Spec.Replicas != nil {
		t.Errorf("the worker Deployment sets replicas %d: the autoscaler owns it (every apply would reset it)", *d.Spec.Replicas)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
		t.Fatalf("selector %v does not match the pod labels %v (%v)", d.Spec.Selector, pod.Labels, err)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	shutdown, renderTimeout := workerDurations(t, c)
	if grace := time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second; grace <= shutdown || shutdown < renderTimeout {
		t.Errorf("grace %s, SHUTDOWN_TIMEOUT %s, RENDER_TIMEOUT %s: want grace > SHUTDOWN_TIMEOUT ≥ RENDER_TIMEOUT", grace, shutdown, renderTimeout)
	}
	req, lim := c.Resources.Requests, c.Resources.Limits
	if req.Cpu().MilliValue() < 1000 || req.Memory().Value() < 512<<20 || lim.Memory().Cmp(*req.Memory()) < 0 {
		t.Errorf("resources %+v: want ≥ 1 CPU and ≥ 512 MiB requested, a memory limit ≥ the request", c.Resources)
	}
	if _, ok := lim[corev1.ResourceCPU]; ok {
		t.Error("a CPU limit: throttling pauses the worker, which then loses render leases")
	}
	var shm *corev1.Volume
	for i, v := range pod.Spec.Volumes {
		for _, m := range c.VolumeMounts {
			if m.Name == v.Name && m.MountPath == "/dev/shm" {
				shm = &pod.Spec.Volumes[i]
			}
		}
	}
	if shm == nil || shm.EmptyDir == nil || shm.EmptyDir.Medium != corev1.StorageMediumMemory ||
		shm.EmptyDir.SizeLimit == nil || shm.EmptyDir.SizeLimit.Value() < 512<<20 || shm.EmptyDir.SizeLimit.Cmp(*lim.Memory()) > 0 {
		t.Errorf("/dev/shm volume %+v: want a memory emptyDir of ≥ 512 MiB within the memory limit", shm)
	}
	hosts := false
	for _, tsc := range pod.Spec.TopologySpreadConstraints {
		s, err := metav1.LabelSelectorAsSelector(tsc.LabelSelector)
		if err != nil || !s.Matches(labels.Set(pod.Labels)) {
			t.Errorf("topology spread on %s: selector %v does not match the pods", tsc.TopologyKey, tsc.LabelSelector)
		}
		if tsc.TopologyKey == corev1.LabelHostname {
			hosts = true
		}
		if tsc.WhenUnsatisfiable != corev1.ScheduleAnyway {
			t.Errorf("topology spread on %s is %s: an autoscaler's new pods must not wait for a node", tsc.TopologyKey, tsc.WhenUnsatisfiable)
		}
	}
	if !hosts {
		t.Errorf("no topology spread across nodes (%s)", corev1.LabelHostname)
	}
	for _, o := range objs {
		if o.kind != "PodDisruptionBudget" {
			continue
		}
		var pdb policyv1.PodDisruptionBudget
		if err := strictDecode(o.json, &pdb); err != nil {
			t.Fatal(err)
		}
		if s, _ := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); s.Matches(labels.Set(pod.Labels)) && pdb.Spec.MinAvailable != nil {
			t.Errorf("%s: minAvailable blocks every drain when the autoscaler sits at that minimum; use maxUnavailable", o)
		}
	}
}

// kedaScaledObject is the part of a ScaledObject the checks below read
// (the schema test validates the whole).
type kedaScaledObject struct {
	Spec struct {
		ScaleTargetRef struct {
			Name string `json:"name"`
			Kind string `json:"kind"`
		} `json:"scaleTargetRef"`
		MinReplicaCount *int32 `json:"minReplicaCount"`
		MaxReplicaCount *int32 `json:"maxReplicaCount"`
		Advanced        struct {
			ScalingModifiers struct {
				Formula string `json:"formula"`
				Target  string `json:"target"`
			} `json:"scalingModifiers"`
			HPAConfig struct {
				Behavior autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior"`
			} `json:"horizontalPodAutoscalerConfig"`
		} `json:"advanced"`
		Triggers []struct {
			Type              string            `json:"type"`
			Name              string            `json:"name"`
			Metadata          map[string]string `json:"metadata"`
			AuthenticationRef struct {
				Name string `json:"name"`
			} `json:"authenticationRef"`
		} `json:"triggers"`
	} `json:"spec"`
}

// redisScalerParams are the metadata and authentication parameters KEDA
// v2.21.0's redis scaler reads (pkg/scalers/redis_scaler.go,
// redisMetadata and parseRedisAddress): trigger metadata is a free-form
// map, so a misspelt key there passes the CRD schema and is silently
// ignored.
var redisScalerParams = []string{"address", "addresses", "addressFromEnv", "host", "hosts", "hostFromEnv", "port", "ports", "portFromEnv",
	"username", "usernameFromEnv", "password", "passwordFromEnv", "sentinelUsername", "sentinelPassword", "sentinelMaster",
	"enableTLS", "unsafeSsl", "listName", "listLength", "activationListLength", "databaseIndex"}

var identifierRe = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

func loadScaledObject(t *testing.T, objs []object) kedaScaledObject {
	t.Helper()
	for _, o := range objs {
		if o.kind == "ScaledObject" {
			var so kedaScaledObject
			if err := json.Unmarshal(o.json, &so); err != nil {
				t.Fatal(err)
			}
			return so
		}
	}
	t.Fatal("no ScaledObject")
	return kedaScaledObject{}
}

func loadHPA(t *testing.T, objs []object) *autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	for _, o := range objs {
		if o.kind == "HorizontalPodAutoscaler" {
			var h autoscalingv2.HorizontalPodAutoscaler
			if err := strictDecode(o.json, &h); err != nil {
				t.Fatal(err)
			}
			return &h
		}
	}
	t.Fatal("no HorizontalPodAutoscaler")
	return nil
}

// adapterRule is the prometheus-adapter external rule of hpa.yaml.
type adapterRule struct {
	SeriesQuery string         `yaml:"seriesQuery"`
	Resources   map[string]any `yaml:"resources"`
	Name        struct {
		As string `yaml:"as"`
	} `yaml:"name"`
	MetricsQuery string `yaml:"metricsQuery"`
}

func loadAdapterRule(t *testing.T, objs []object) adapterRule {
	t.Helper()
	for _, o := range objs {
		if o.kind != "ConfigMap" || !strings.Contains(o.name, "prometheus-adapter") {
			continue
		}
		var cm corev1.ConfigMap
		if err := strictDecode(o.json, &cm); err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			ExternalRules []adapterRule `yaml:"externalRules"`
		}
		dec := yaml.NewDecoder(strings.NewReader(cm.Data["config.yaml"]))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil || len(cfg.ExternalRules) != 1 {
			t.Fatalf("%s config.yaml: %v, %d rules", o, err, len(cfg.ExternalRules))
		}
		return cfg.ExternalRules[0]
	}
	t.Fatal("no prometheus-adapter ConfigMap")
	return adapterRule{}
}

// TestAutoscalers_Settings: both autoscalers target the worker Deployment,
// keep at least two workers, wait longer than a render before removing one,
// and scale on the queue, not CPU; the KEDA triggers use only parameters its
// redis scaler reads, one per queue of QUEUES, with the formula naming them.
func TestAutoscalers_Settings(t *testing.T) {
	objs := loadObjects(t)
	d := deployment(t, objs, "pdfexport-worker")
	_, renderTimeout := workerDurations(t, d.Spec.Template.Spec.Containers[0])
	queues := workerQueues(t)

	checkBehavior := func(what string, b *autoscalingv2.HorizontalPodAutoscalerBehavior) {
		if b == nil || b.ScaleDown == nil || b.ScaleDown.StabilizationWindowSeconds == nil ||
			time.Duration(*b.ScaleDown.StabilizationWindowSeconds)*time.Second <= renderTimeout {
			t.Errorf("%s: scale-down stabilization must exceed RENDER_TIMEOUT %s: %+v", what, renderTimeout, b)
		}
	}

	so := loadScaledObject(t, objs)
	if so.Spec.ScaleTargetRef.Name != d.Name || (so.Spec.ScaleTargetRef.Kind != "" && so.Spec.ScaleTargetRef.Kind != "Deployment") {
		t.Errorf("ScaledObject targets %+v", so.Spec.ScaleTargetRef)
	}
	if so.Spec.MinReplicaCount == nil || *so.Spec.MinReplicaCount < 2 || so.Spec.MaxReplicaCount == nil || *so.Spec.MaxReplicaCount <= *so.Spec.MinReplicaCount {
		t.Errorf("ScaledObject replicas %v–%v: want min ≥ 2 < max", so.Spec.MinReplicaCount, so.Spec.MaxReplicaCount)
	}
	checkBehavior("ScaledObject", &so.Spec.Advanced.HPAConfig.Behavior)
	var names []string
	for _, tr := range so.Spec.Triggers {
		names = append(names, tr.Name)
		if tr.Type != "redis" {
			t.Errorf("trigger %s: type %s", tr.Name, tr.Type)
		}
		for k := range tr.Metadata {
			if !slices.Contains(redisScalerParams, k) {
				t.Errorf("trigger %s: KEDA's redis scaler reads no %q", tr.Name, k)
			}
		}
		if tr.Metadata["listName"] != "asynq:{"+tr.Name+"}:pending" {
			t.Errorf("trigger %s watches %q: name triggers after their queue", tr.Name, tr.Metadata["listName"])
		}
		if tr.AuthenticationRef.Name == "" {
			t.Errorf("trigger %s has no authenticationRef (the Redis address and password)", tr.Name)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, queues) {
		t.Errorf("triggers %v, QUEUES %v: one trigger per queue", names, queues)
	}
	var inFormula []string
	for _, id := range identifierRe.FindAllString(so.Spec.Advanced.ScalingModifiers.Formula, -1) {
		if !slices.Contains(inFormula, id) {
			inFormula = append(inFormula, id)
		}
	}
	slices.Sort(inFormula)
	if !slices.Equal(inFormula, queues) || so.Spec.Advanced.ScalingModifiers.Target == "" {
		t.Errorf("formula %q (target %q) names %v: want every queue", so.Spec.Advanced.ScalingModifiers.Formula, so.Spec.Advanced.ScalingModifiers.Target, inFormula)
	}

	h := loadHPA(t, objs)
	if h.Spec.ScaleTargetRef.Name != d.Name || h.Spec.ScaleTargetRef.Kind != "Deployment" {
		t.Errorf("HPA targets %+v", h.Spec.ScaleTargetRef)
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 || h.Spec.MaxReplicas <= *h.Spec.MinReplicas {
		t.Errorf("HPA replicas %v–%d", h.Spec.MinReplicas, h.Spec.MaxReplicas)
	}
	checkBehavior("HPA", h.Spec.Behavior)
	rule := loadAdapterRule(t, objs)
	external := false
	for _, m := range h.Spec.Metrics {
		switch m.Type {
		case autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType:
			t.Errorf("HPA metric %s: the queue, not CPU or memory, says how many workers are needed", m.Type)
		case autoscalingv2.ExternalMetricSourceType:
			external = true
			if m.External.Metric.Name != rule.Name.As {
				t.Errorf("HPA metric %s, the adapter rule serves %s", m.External.Metric.Name, rule.Name.As)
			}
		}
	}
	if !external {
		t.Error("the HPA has no External metric")
	}
}

// workerQueues are the queue names of the worker's QUEUES, sorted.
func workerQueues(t *testing.T) []string {
	t.Helper()
	cfg, err := config.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	weights, err := config.ParseQueues(cfg.Queues)
	if err != nil {
		t.Fatal(err)
	}
	var qs []string
	for q := range weights {
		qs = append(qs, q)
	}
	slices.Sort(qs)
	return qs
}
