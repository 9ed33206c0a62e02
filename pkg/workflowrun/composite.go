package workflowrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// compositeGate evaluates the condition of a forEach or parallel step
// against sc, recording the step as skipped when it does not hold.
func (r *runner) compositeGate(ctx context.Context, st step, sc *scope) (bool, error) {
	if st.cond == nil {
		return true, nil
	}
	info, err := r.condition(ctx, st, sc)
	if err != nil {
		return false, err
	}
	if !info.passed {
		now := time.Now()
		r.add(sc, &record{id: st.id, status: types.StepSkipped, started: now, end: now, cond: info, allowFailure: st.allowFailure})
	}
	return info.passed, nil
}

// forEach runs the body once per item. Each iteration sees .vars.<as> and
// .vars.<as>_index, and its sub-steps' results under their ids; after it,
// each result is kept as <id>_<index> too. Iterations run in order, or up
// to Options.ForEachConcurrency at once, each then on a copy of the
// results from before the loop, merged back in index order.
func (r *runner) forEach(ctx context.Context, st step, sc *scope) error {
	if ok, err := r.compositeGate(ctx, st, sc); !ok || err != nil {
		return err
	}
	items, err := r.items(st, sc)
	if err != nil {
		return err
	}
	as := st.forEach.As
	if as == "" {
		as = v1alpha1.DefaultForEachVariable
	}
	body := st.forEach.Steps
	iteration := func(ctx context.Context, i int, isc *scope) error {
		isc.vars[as] = items[i]
		isc.vars[as+"_index"] = i
		for _, s := range body {
			sub := fromSubStep(s)
			if _, err := r.call(ctx, sub, fmt.Sprintf("%s_%d", sub.id, i), isc); err != nil {
				return err
			}
		}
		return nil
	}
	merge := func(i int, isc *scope) {
		for _, s := range body {
			for _, id := range []string{s.ID, fmt.Sprintf("%s_%d", s.ID, i)} {
				if v, ok := isc.results[id]; ok {
					sc.results[id] = v
				}
			}
		}
	}
	var firstErr error
	if r.e.opts.ForEachConcurrency <= 1 {
		for i := range items {
			isc := sc.child()
			err := iteration(ctx, i, isc)
			merge(i, isc)
			if err != nil {
				firstErr = err
				break
			}
		}
	} else {
		errs := make([]error, len(items))
		scopes := make([]*scope, len(items))
		r.bounded(len(items), r.e.opts.ForEachConcurrency, func(i int) bool {
			scopes[i] = sc.isolated()
			errs[i] = iteration(ctx, i, scopes[i])
			return errs[i] == nil
		})
		for i := range items {
			if scopes[i] != nil {
				merge(i, scopes[i])
				r.adopt(sc, scopes[i])
			}
			if firstErr == nil && errs[i] != nil {
				firstErr = errs[i]
			}
		}
	}
	if firstErr != nil && st.allowFailure && !isBadInput(firstErr) {
		return nil
	}
	return firstErr
}

// items resolves a forEach's items to a list: a template that yields an
// array, or a JSON array in text.
func (r *runner) items(st step, sc *scope) ([]any, error) {
	r.track(sc, st.forEach.Items)
	v, err := render(st.forEach.Items, sc.data(r.input))
	if err != nil {
		return nil, &Error{Workflow: r.name, Step: st.id, Field: "forEach.items", Err: fmt.Errorf("failed to resolve items expression: %w", err)}
	}
	if s, ok := v.(string); ok {
		var parsed []any
		if json.Unmarshal([]byte(strings.TrimSpace(s)), &parsed) == nil {
			return parsed, nil
		}
	}
	items, ok := v.([]any)
	if !ok {
		what := typeName(v)
		if v == nil {
			what = "nil" // muster's word
		}
		return nil, &Error{Workflow: r.name, Step: st.id, Field: "forEach.items",
			Err: fmt.Errorf("items expression %q resolved to %s, expected a list", st.forEach.Items, what)}
	}
	return items, nil
}

// parallelStep runs the sub-steps at once, up to Options.Concurrency, each
// against the results from before the group, and merges their results by
// sub-step id in the order they are declared. Every sub-step runs to its
// end; the first failure in declaration order fails the group, unless the
// group allows failure.
func (r *runner) parallelStep(ctx context.Context, st step, sc *scope) error {
	if ok, err := r.compositeGate(ctx, st, sc); !ok || err != nil {
		return err
	}
	subs := st.parallel
	errs := make([]error, len(subs))
	scopes := make([]*scope, len(subs))
	r.bounded(len(subs), r.e.opts.Concurrency, func(i int) bool {
		scopes[i] = sc.isolated()
		sub := fromSubStep(subs[i])
		_, errs[i] = r.call(ctx, sub, sub.id, scopes[i])
		return true // siblings run on, as muster's do
	})
	var firstErr error
	for i, s := range subs {
		if v, ok := scopes[i].results[s.ID]; ok {
			sc.results[s.ID] = v
		}
		r.adopt(sc, scopes[i])
		if firstErr == nil && errs[i] != nil {
			firstErr = errs[i]
		}
	}
	if firstErr != nil && st.allowFailure && !isBadInput(firstErr) {
		return nil
	}
	return firstErr
}

// bounded calls fn(0..n-1), at most limit at once, in index order of
// starting. Once fn returns false no further index starts; those running
// finish.
func (r *runner) bounded(n, limit int, fn func(i int) bool) {
	sem := make(chan struct{}, limit)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		stopped bool
	)
	for i := range n {
		sem <- struct{}{}
		mu.Lock()
		stop := stopped
		mu.Unlock()
		if stop {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if !fn(i) {
				mu.Lock()
				stopped = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// isBadInput reports whether err is a definition's or input's fault (a
// template, a type, a path), which allowFailure does not excuse, rather
// than a tool's failure.
func isBadInput(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Field != "" && e.Field != "result"
}
