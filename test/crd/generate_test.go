package crd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/musterd/musterd/internal/modroot"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
)

// crdFiles are the CRDs controller-gen writes, one per kind.
var crdFiles = []string{"muster.giantswarm.io_mcpservers.yaml", "muster.giantswarm.io_workflows.yaml"}

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := modroot.Dir()
	require.NoError(t, err)
	return root
}

// TestCommittedCRDsAreUpToDate runs controller-gen, at the version and
// with the output that generate.go pins, into a temporary directory and
// requires the committed CRDs to be byte for byte what it writes: a marker
// changed without `make generate` fails here.
func TestCommittedCRDsAreUpToDate(t *testing.T) {
	root := moduleRoot(t)
	generate, err := os.ReadFile(filepath.Join(root, "pkg/apis/muster/v1alpha1/generate.go"))
	require.NoError(t, err)
	line := regexp.MustCompile(`(?m)^//go:generate go run (sigs\.k8s\.io/controller-tools/cmd/controller-gen@v[0-9.]+) .*\bcrd\b.*$`).FindSubmatch(generate)
	require.NotNil(t, line, "generate.go runs a pinned controller-gen with the crd generator")
	require.Contains(t, string(line[0]), "output:crd:artifacts:config=../../../../config/crd/bases", "generate.go writes the CRDs to config/crd/bases")

	out := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", string(line[1]), "crd", "paths=./pkg/apis/...", "output:crd:artifacts:config="+out)
	cmd.Dir = root
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "controller-gen: %s", output)

	generated, err := filepath.Glob(filepath.Join(out, "*.yaml"))
	require.NoError(t, err)
	var names []string
	for _, path := range generated {
		names = append(names, filepath.Base(path))
	}
	assert.ElementsMatch(t, crdFiles, names)
	for _, name := range crdFiles {
		want, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(root, "config/crd/bases", name))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), "config/crd/bases/%s is not what controller-gen generates; run `make generate`", name)
	}
}

// referenceDir finds sub of muster's reference material, shared/reference
// beside the repository (or beside the directory of the worktree holding
// it). The material is muster's, read in place and never copied into the
// repository; where it is absent the test skips and says so.
func referenceDir(t *testing.T, sub string) string {
	t.Helper()
	for dir := filepath.Dir(moduleRoot(t)); ; dir = filepath.Dir(dir) {
		candidate := filepath.Join(dir, "shared", "reference", sub)
		if _, err := os.Stat(candidate); err == nil {
			return candidate
		}
		if filepath.Dir(dir) == dir {
			t.Skipf("muster's reference material (shared/reference/%s beside the repository) is not on this machine", sub)
		}
	}
}

// allowedDifferences are every difference, descriptions aside, between the
// generated CRDs and muster's, by file, each justified. Anything else is a
// compatibility break and fails TestGeneratedCRDsMatchMusters. Printer
// columns are checked apart, in TestPrinterColumns.
var allowedDifferences = map[string][]string{
	"muster.giantswarm.io_mcpservers.yaml": {
		// The controller-gen that generated them: muster's v0.21.0, ours
		// v0.23.0 (pinned in generate.go). The schemas are equal.
		`changed /metadata/annotations/controller-gen.kubebuilder.io/version: "v0.21.0" -> "v0.23.0"`,
		// Status fields musterd adds; status is written only by the
		// controller, so no user's document is affected. The generation the
		// status describes, so that a stale status can be told apart.
		// The last failure and its time, kept after the server recovered,
		// while lastError says only why it is down now.
		`added /spec/versions/0/schema/openAPIV3Schema/properties/status/properties/lastFailure: {"type":"string"}`,
		`added /spec/versions/0/schema/openAPIV3Schema/properties/status/properties/lastFailureTime: {"format":"date-time","type":"string"}`,
		`added /spec/versions/0/schema/openAPIV3Schema/properties/status/properties/observedGeneration: {"format":"int64","type":"integer"}`,
		// An operator's stop or start (musterd stop NAME), kept in the
		// status in Kubernetes mode so that it outlives musterd's restarts.
		`added /spec/versions/0/schema/openAPIV3Schema/properties/status/properties/override: {"properties":{"correlationId":{"type":"string"},"hash":{"type":"string"},"reason":{"type":"string"},"since":{"format":"date-time","type":"string"},"state":{"enum":["stopped","started"],"type":"string"}},"required":["hash","since","state"],"type":"object"}`,
		// The MCP protocol version agreed with the server: which generation
		// it speaks.
		`added /spec/versions/0/schema/openAPIV3Schema/properties/status/properties/protocolVersion: {"type":"string"}`,
		// The count of tools, behind the Tools printer column.
		`added /spec/versions/0/schema/openAPIV3Schema/properties/status/properties/toolCount: {"type":"integer"}`,
		// The exposed tool names, as musterd's status files and API show them.
		`added /spec/versions/0/schema/openAPIV3Schema/properties/status/properties/tools: {"items":{"type":"string"},"type":"array"}`,
		// The fields of the definition file musterd ignored, as muster's
		// loader does, each naming file, line and field.
		`added /spec/versions/0/schema/openAPIV3Schema/properties/status/properties/warnings: {"items":{"type":"string"},"type":"array"}`,
	},
	"muster.giantswarm.io_workflows.yaml": {
		`changed /metadata/annotations/controller-gen.kubebuilder.io/version: "v0.21.0" -> "v0.23.0"`,
		// The referenced tools no running server offers, as in musterd's
		// status files and API.
		`added /spec/versions/0/schema/openAPIV3Schema/properties/status/properties/missingTools: {"items":{"type":"string"},"type":"array"}`,
		`added /spec/versions/0/schema/openAPIV3Schema/properties/status/properties/observedGeneration: {"format":"int64","type":"integer"}`,
		`added /spec/versions/0/schema/openAPIV3Schema/properties/status/properties/warnings: {"items":{"type":"string"},"type":"array"}`,
	},
}

// TestGeneratedCRDsMatchMusters compares the generated CRDs with muster's
// field by field: names, types, enums, patterns, bounds, defaults, required
// fields, CEL rules and messages, subresources, short names, scope. Only
// descriptions (musterd's doc comments are its own) and printer columns
// (TestPrinterColumns) are left out.
func TestGeneratedCRDsMatchMusters(t *testing.T) {
	refDir := referenceDir(t, "crds")
	root := moduleRoot(t)
	for _, name := range crdFiles {
		t.Run(name, func(t *testing.T) {
			ref := loadYAML(t, filepath.Join(refDir, name))
			gen := loadYAML(t, filepath.Join(root, "config/crd/bases", name))
			var diffs []string
			diff("", ref, gen, &diffs)
			for _, d := range diffs {
				t.Log(d)
			}
			assert.Equal(t, allowedDifferences[name], diffs)
		})
	}
}

func loadYAML(t *testing.T, path string) any {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc any
	require.NoError(t, yaml.Unmarshal(data, &doc), path)
	return doc
}

// diff appends the differences between muster's document (ref) and the
// generated one (gen) below path, in a stable order, ignoring descriptions
// and printer columns.
func diff(path string, ref, gen any, out *[]string) {
	switch r := ref.(type) {
	case map[string]any:
		g, ok := gen.(map[string]any)
		if !ok {
			break
		}
		keys := map[string]bool{}
		for k := range r {
			keys[k] = true
		}
		for k := range g {
			keys[k] = true
		}
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range keys {
				if !yield(k) {
					return
				}
			}
		}) {
			// A "description" key documents a schema, except in a
			// properties map, where it is a field named description.
			if (k == "description" && !strings.HasSuffix(path, "/properties")) || k == "additionalPrinterColumns" {
				continue
			}
			rv, inRef := r[k]
			gv, inGen := g[k]
			switch {
			case !inGen:
				*out = append(*out, fmt.Sprintf("removed %s/%s: %s", path, k, compact(rv)))
			case !inRef:
				*out = append(*out, fmt.Sprintf("added %s/%s: %s", path, k, compact(gv)))
			default:
				diff(path+"/"+k, rv, gv, out)
			}
		}
		return
	case []any:
		g, ok := gen.([]any)
		if !ok || len(g) != len(r) {
			break
		}
		for i := range r {
			diff(fmt.Sprintf("%s/%d", path, i), r[i], g[i], out)
		}
		return
	default:
		if compact(ref) == compact(gen) {
			return
		}
	}
	*out = append(*out, fmt.Sprintf("changed %s: %s -> %s", path, compact(ref), compact(gen)))
}

// compact is v's JSON without descriptions, for messages and comparison.
func compact(v any) string {
	data, err := json.Marshal(stripDescriptions(v, false))
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(data)
}

// stripDescriptions drops the schemas' descriptions below v; inProperties
// says v is a properties map, whose keys are field names.
func stripDescriptions(v any, inProperties bool) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if k != "description" || inProperties {
				out[k] = stripDescriptions(e, k == "properties" && !inProperties)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = stripDescriptions(e, false)
		}
		return out
	}
	return v
}

// printerColumn is one of a CRD's additionalPrinterColumns.
type printerColumn struct {
	Name     string
	Type     string
	JSONPath string `yaml:"jsonPath"`
	Priority int
}

// TestPrinterColumns pins what `kubectl get` shows. MCPServer's default
// columns differ from muster's (Type, URL, AutoStart, Status, Age) on
// purpose: Type, State and Tools say at a glance whether a server
// serves; muster's URL and
// AutoStart stay available with priority 1 (`kubectl get -o wide`), and
// its "Status" column is "State", named after the field it shows.
func TestPrinterColumns(t *testing.T) {
	root := moduleRoot(t)
	want := map[string][]printerColumn{
		"muster.giantswarm.io_mcpservers.yaml": {
			{Name: "Type", Type: "string", JSONPath: ".spec.type"},
			{Name: "State", Type: "string", JSONPath: ".status.state"},
			{Name: "Tools", Type: "integer", JSONPath: ".status.toolCount"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
			{Name: "URL", Type: "string", JSONPath: ".spec.url", Priority: 1},
			{Name: "AutoStart", Type: "boolean", JSONPath: ".spec.autoStart", Priority: 1},
		},
		"muster.giantswarm.io_workflows.yaml": {
			{Name: "Valid", Type: "boolean", JSONPath: ".status.valid"},
			{Name: "Steps", Type: "integer", JSONPath: ".status.stepCount"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
	}
	for _, name := range crdFiles {
		data, err := os.ReadFile(filepath.Join(root, "config/crd/bases", name))
		require.NoError(t, err)
		var crd struct {
			Spec struct {
				Versions []struct {
					Columns []printerColumn `yaml:"additionalPrinterColumns"`
				}
			}
		}
		require.NoError(t, yaml.Unmarshal(data, &crd))
		require.Len(t, crd.Spec.Versions, 1, name)
		assert.Equal(t, want[name], crd.Spec.Versions[0].Columns, name)
	}
}
