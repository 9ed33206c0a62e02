package api

import (
	"net/http"
	"strconv"

	"github.com/musterd/musterd/pkg/api/types"
)

// ExecutionSource is where workflow executions are read; the workflow
// engine (workflowrun.Engine) is one.
type ExecutionSource interface {
	// Executions answers a query, newest first; an invalid query is an
	// error saying why.
	Executions(types.ExecutionQuery) (types.ExecutionList, error)
	// Execution returns one execution.
	Execution(id string) (*types.Execution, bool)
}

// executions serves GET /api/v1/executions?workflow=&status=&limit=&offset=.
// Executions hold tools' inputs and results, so the token guards them as
// it guards events.
func (s *server) executions(w http.ResponseWriter, r *http.Request) {
	if !s.requireToken(w, r, "to read executions") || !s.servesExecutions(w) {
		return
	}
	q := r.URL.Query()
	// The numbers are read here; what they may be is the source's to say
	// (workflowrun.CheckQuery), a limit given as 0 included.
	query := types.ExecutionQuery{Workflow: q.Get("workflow"), Status: q.Get("status")}
	for _, p := range []struct {
		name string
		set  func(int)
	}{{"limit", func(n int) { query.Limit = &n }}, {"offset", func(n int) { query.Offset = n }}} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				writeError(w, http.StatusBadRequest, p.name+" must be a number")
				return
			}
			p.set(n)
		}
	}
	list, err := s.opts.Executions.Executions(query)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// execution serves GET /api/v1/executions/{id}.
func (s *server) execution(w http.ResponseWriter, r *http.Request) {
	if !s.requireToken(w, r, "to read executions") || !s.servesExecutions(w) {
		return
	}
	id := r.PathValue("id")
	exec, ok := s.opts.Executions.Execution(id)
	if !ok {
		writeError(w, http.StatusNotFound, "execution "+id+": not found")
		return
	}
	writeJSON(w, http.StatusOK, exec)
}

func (s *server) servesExecutions(w http.ResponseWriter) bool {
	if s.opts.Executions == nil {
		writeError(w, http.StatusNotFound, "this daemon runs no workflows: it keeps no executions")
		return false
	}
	return true
}
