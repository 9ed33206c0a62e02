package workflow_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/musterd/musterd/internal/memtest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/reconcilers/workflow"
	"github.com/musterd/musterd/pkg/resources"
)

// BenchmarkRetainedPerWorkflow reconciles 100,000 workflows of one step,
// the files of make bench's 100,000-workflow start, and reports the heap
// the reconciler keeps per workflow once they are all judged.
// Its tool is offered by no server, as in make bench, so each verdict
// holds a validation error and a missing tool; "offered" is the same with
// the tool on offer. The index and its definitions are made before the
// first measure and alive at the second, so the figure is the
// reconciler's own.
func BenchmarkRetainedPerWorkflow(b *testing.B) {
	for _, offered := range []bool{false, true} {
		name := "missing"
		if offered {
			name = "offered"
		}
		b.Run(name, func(b *testing.B) {
			const n = 100_000
			ix := resources.New()
			keys := make([]events.Key, n)
			for i := range n {
				name := fmt.Sprintf("wf%05d", i)
				path := "workflows/" + name + ".yaml"
				docs, err := v1alpha1.DecodeFile(path, fmt.Appendf(nil, `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: %s
spec:
  description: initial
  steps:
    - id: only
      tool: x_bench_tool
`, name))
				if err != nil {
					b.Fatal(err)
				}
				d := docs[0]
				keys[i] = d.Key()
				ix.SetFile(path, []resources.Doc{{Key: keys[i], Object: d.Object, Hash: d.Hash}}, nil, keys[i])
			}
			cat := catalogue.New(catalogue.Options{})
			if offered {
				cat.Set(events.NewKey(v1alpha1.KindMCPServer, "", "bench"), "", []string{"tool"}) // exposed as x_bench_tool
			}
			var perWorkflow float64
			for b.Loop() {
				before := memtest.LiveHeap()
				r := workflow.New(ix, cat)
				for _, k := range keys {
					r.Reconcile(context.Background(), reconcilers.Request{Key: k, Attempt: 1})
				}
				perWorkflow = float64(memtest.LiveHeap()-before) / n
				if st, _ := r.Status(keys[n-1]); st.(v1alpha1.WorkflowStatus).Valid != offered {
					b.Fatalf("%v: valid is %v, want %v", keys[n-1], st.(v1alpha1.WorkflowStatus).Valid, offered)
				}
			}
			runtime.KeepAlive(ix)
			runtime.KeepAlive(keys)
			b.ReportMetric(perWorkflow, "B/workflow")
		})
	}
}
