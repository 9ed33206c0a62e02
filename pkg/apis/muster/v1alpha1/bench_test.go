package v1alpha1

import (
	"testing"
)

// benchFiles are definition files of the sizes a cold start decodes by the
// thousand: the smallest workflow, a typical remote MCPServer
// and a larger workflow with arguments, templates and nested steps.
var benchFiles = []struct{ name, path, src string }{
	{"SmallWorkflow", "workflows/wf00001.yaml", `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: wf00001
spec:
  description: initial
  steps:
    - id: only
      tool: x_bench_tool
`},
	{"MCPServer", "mcpservers/kubernetes.yaml", `# Kubernetes tools, reached through the cluster's gateway.
apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: kubernetes
  namespace: platform
  labels:
    team: platform
    tier: core
  annotations:
    owner: "platform@example.com"
spec:
  type: streamable-http
  toolPrefix: k8s
  description: "Kubernetes API tools for the management cluster"
  autoStart: true
  url: https://mcp.example.com/kubernetes/mcp
  headers:
    X-Cluster: management
    X-Request-Source: musterd
  timeout: 60
  auth:
    type: oauth
    forwardToken: true
    requiredAudiences: ["dex-k8s-authenticator", "kubernetes"]
`},
	{"LargeWorkflow", "workflows/release.yaml", `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: release
  namespace: delivery
  labels:
    app: release
spec:
  description: "Build, test and roll out a release, rolling back on failure"
  args:
    version:
      type: string
      required: true
      description: "Version to release"
    environments:
      type: array
      default: ["staging", "production"]
      description: "Environments to roll out to, in order"
    dry_run:
      type: boolean
      default: false
    replicas:
      type: integer
      default: 3
  steps:
    - id: build
      tool: ci_build_image
      args:
        tag: "{{ .input.version }}"
        push: true
        labels: {source: musterd, release: "{{ .input.version }}"}
      store: true
    - id: test
      tool: ci_run_tests
      args:
        image: "{{ .results.build.image }}"
        suites: [unit, integration, e2e]
        timeout: 600
      allowFailure: false
    - id: checks
      parallel:
        - id: scan
          tool: sec_scan_image
          args: {image: "{{ .results.build.image }}", severity: high}
        - id: lint
          tool: ci_lint_manifests
          args: {path: deploy/}
          allow_failure: true
    - id: rollout
      forEach:
        items: "{{ .input.environments }}"
        as: env
        steps:
          - id: deploy
            tool: k8s_apply
            args:
              namespace: "{{ .vars.env }}"
              image: "{{ .results.build.image }}"
              replicas: "{{ .input.replicas }}"
              dryRun: "{{ .input.dry_run }}"
          - id: wait
            tool: k8s_rollout_status
            args: {namespace: "{{ .vars.env }}", timeout: 300}
            condition:
              fromStep: deploy
              expect:
                success: true
                jsonPath:
                  status: applied
    - id: announce
      tool: chat_post
      args:
        channel: "#releases"
        text: "Released {{ .input.version }} to {{ .input.environments }}"
      condition:
        template: "{{ not .input.dry_run }}"
      output: true
  onFailure:
    - id: rollback
      tool: k8s_rollback
      args: {namespace: production}
  output:
    image: "{{ .results.build.image }}"
    version: "{{ .input.version }}"
`},
}

func BenchmarkDecodeFile(b *testing.B) {
	for _, f := range benchFiles {
		data := []byte(f.src)
		docs, err := DecodeFile(f.path, data)
		if err != nil || len(docs) != 1 || docs[0].Err != nil {
			b.Fatalf("%s: %v %v", f.name, err, docs)
		}
		b.Run(f.name, func(b *testing.B) {
			benchDecode(b, data, func() error { _, err := DecodeFile(f.path, data); return err })
		})
		// The same file by yaml.v3, the path the fast path saves: the
		// difference is what it saves a cold start per file.
		b.Run(f.name+"/yaml.v3", func(b *testing.B) {
			benchDecode(b, data, func() error {
				_, err := decodeFile(nil, f.path, data, checkText, slowParseFile, decodeDocument)
				return err
			})
		})
	}
}

func benchDecode(b *testing.B, data []byte, decode func() error) {
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	cpu := processCPU()
	for b.Loop() {
		if err := decode(); err != nil {
			b.Fatal(err)
		}
	}
	if cpu := processCPU() - cpu; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}
