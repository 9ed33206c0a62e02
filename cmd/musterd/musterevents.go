package main

import (
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/musterevents"
)

// musterTranslation is what the translation into muster's events looks
// up: the reconcilers' observed status, and the index's definitions in
// force and their errors. The core_events log and the Kubernetes Events
// recorder translate alike.
func musterTranslation(d *daemon) musterevents.Options {
	return musterevents.Options{
		Status: func(key events.Key) (any, bool) { return d.Reconcilers.Status(key) },
		StepCount: func(key events.Key) (int, bool) {
			e, ok := d.Index.Get(key)
			if wf, isWF := e.Object.(*v1alpha1.Workflow); ok && isWF && wf != nil {
				return len(wf.Spec.Steps), true
			}
			return 0, false
		},
		DefinitionError: func(key events.Key) error {
			e, _ := d.Index.Get(key)
			return e.Err
		},
	}
}
