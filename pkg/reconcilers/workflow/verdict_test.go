package workflow_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers/workflow"
)

// A compact verdict, which keeps a bit per missing tool and spells out its
// status when read, reads exactly as the verdict spelled out at the
// reconcile: for each workflow and each state of the catalogue, the two
// reconcilers' statuses are deeply equal, messages, order and the Ready
// condition included.
func TestACompactVerdictReadsAsTheVerdictSpelledOut(t *testing.T) {
	steps := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "    - id: s%d\n      tool: x_docker_t%d\n", i, i%3)
		}
		return b.String()
	}
	workflows := map[string]string{
		"deploy": src,
		// 64 references fit a compact verdict's bits; 65 do not.
		"sixtyfour": "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: sixtyfour\nspec:\n  steps:\n" + steps(64),
		"sixtyfive": "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: sixtyfive\nspec:\n  steps:\n" + steps(65),
		// Spelled out in both: a template error, and a call of itself.
		"template": "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: template\nspec:\n  steps:\n    - id: render\n      tool: x_docker_build\n      args:\n        x: \"{{ .input.a \"\n",
		"self":     "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: self\nspec:\n  steps:\n    - id: again\n      tool: workflow_self\n    - id: build\n      tool: x_docker_build\n",
	}
	// A broken edit keeps the last good definition in force, with the
	// file's error.
	const broken = "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: %s\nspec:\n  steps: []\n"
	catalogues := map[string]func(*catalogue.Catalogue){
		"nothing offered": func(*catalogue.Catalogue) {},
		"some offered": func(c *catalogue.Catalogue) {
			c.Set(docker, "", []string{"build", "t1"})
			c.Set(k8s, "", []string{"apply"})
		},
		"all offered": func(c *catalogue.Catalogue) {
			c.Set(docker, "", []string{"build", "t0", "t1", "t2"})
			c.Set(git, "", []string{"status"})
			c.Set(k8s, "", []string{"apply", "delete", "get"})
		},
		"a server starting": func(c *catalogue.Catalogue) {
			c.SetStarting(git, catalogue.Naming{}, true)
			c.Set(docker, "", []string{"build"})
		},
	}
	for cname, offer := range catalogues {
		for _, brokenEdit := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, broken edit %v", cname, brokenEdit), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					compact, spelled := newHarness(), newHarness()
					workflow.SpellOutVerdicts(spelled.r)
					for _, h := range []*harness{compact, spelled} {
						offer(h.cat)
					}
					for name, def := range workflows {
						key := events.NewKey(v1alpha1.KindWorkflow, "", name)
						path := "workflows/" + name + ".yaml"
						for _, h := range []*harness{compact, spelled} {
							h.declare(t, path, def, key)
							if brokenEdit {
								h.declare(t, path, fmt.Sprintf(broken, name), key)
							}
						}
						resA, a := compact.reconcile(t, key)
						resB, b := spelled.reconcile(t, key)
						assert.Equal(t, resB.Err, resA.Err, name)
						assert.Equal(t, b, a, name)
						require.NotEmpty(t, a.Conditions, name)
						for _, h := range []*harness{compact, spelled} {
							valid, known := h.r.Valid(key)
							assert.True(t, known, "%s Valid: known", name)
							assert.Equal(t, a.Valid, valid, "%s Valid", name)
						}
						// Spelled out: a broken file's verdicts, template
						// errors, a cycle, deploy's x_git_status while git
						// starts, and sixtyfive's 65th step's tool
						// (x_docker_t1) while no server offers it.
						wantCompact := !brokenEdit && name != "template" && name != "self" &&
							(name != "deploy" || cname != "a server starting") &&
							(name != "sixtyfive" || cname == "some offered" || cname == "all offered")
						assert.Equal(t, wantCompact, workflow.IsCompact(compact.r, key), "%s compact", name)
						assert.False(t, workflow.IsCompact(spelled.r, key), "%s spelled out", name)
					}
					_, known := compact.r.Valid(events.NewKey(v1alpha1.KindWorkflow, "", "never-declared"))
					assert.False(t, known, "a workflow never reconciled has no verdict")
				})
			})
		}
	}
}
