package api

import (
	"errors"
	"net/http"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/controls"
	"github.com/musterd/musterd/pkg/events"
)

// The routes of the operators' controls (package controls): services,
// per-kind reconciliation, resync and the overview. Every mutation needs
// the token, when one is set.
func (s *server) controlRoutes(mux *http.ServeMux) {
	post := []string{http.MethodPost}
	mux.Handle("/api/v1/overview", allow(read, s.overview))
	mux.Handle("/api/v1/kinds", allow(read, s.kinds))
	mux.Handle("/api/v1/kinds/{kind}/{action}", allow(post, s.toggleKind))
	mux.Handle("/api/v1/resync", allow(post, s.resync))
	mux.Handle("/api/v1/services/{namespace}/{name}/{action}", allow(post, s.serviceAction))
}

func (s *server) overview(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.opts.Controls.Overview())
}

func (s *server) kinds(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.opts.Controls.Overview().Kinds)
}

func (s *server) toggleKind(w http.ResponseWriter, r *http.Request) {
	if !s.requireToken(w, r, "to enable or disable a kind") {
		return
	}
	kind, err := types.ResolveKind(r.PathValue("kind"))
	if err != nil {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	var enable bool
	switch r.PathValue("action") {
	case "enable":
		enable = true
	case "disable":
	default:
		writeError(w, http.StatusNotFound, "no such action "+r.PathValue("action")+": use enable or disable")
		return
	}
	if err := s.opts.Controls.SetKindEnabled(kind.Name, enable); err != nil {
		s.controlError(w, err)
		return
	}
	for _, k := range s.opts.Controls.Overview().Kinds {
		if k.Kind == kind.Name {
			writeJSON(w, http.StatusOK, k)
			return
		}
	}
	writeError(w, http.StatusNotFound, "kind "+kind.Name+" has no reconciler")
}

func (s *server) resync(w http.ResponseWriter, r *http.Request) {
	if !s.requireToken(w, r, "to resync") {
		return
	}
	kind := ""
	if q := r.URL.Query().Get("kind"); q != "" {
		k, err := types.ResolveKind(q)
		if err != nil {
			writeError(w, http.StatusNotFound, err.Error())
			return
		}
		kind = k.Name
	}
	res, err := s.opts.Controls.Resync(r.Context(), kind)
	if err != nil {
		s.controlError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, res)
}

func (s *server) serviceAction(w http.ResponseWriter, r *http.Request) {
	if !s.requireToken(w, r, "to start, stop or restart a service") {
		return
	}
	r.SetPathValue("kind", "mcpservers")
	_, key, ok := resourceKey(w, r)
	if !ok {
		return
	}
	reason := r.URL.Query().Get("reason")
	var (
		res controls.ServiceResult
		err error
	)
	switch r.PathValue("action") {
	case controls.ActionStart:
		res, err = s.opts.Controls.Start(r.Context(), key, reason)
	case controls.ActionStop:
		res, err = s.opts.Controls.Stop(r.Context(), key, reason)
	case controls.ActionRestart:
		res, err = s.opts.Controls.Restart(r.Context(), key, reason)
	default:
		writeError(w, http.StatusNotFound, "no such action "+r.PathValue("action")+": use start, stop or restart")
		return
	}
	if err != nil {
		s.controlError(w, err)
		return
	}
	s.log.Info("service request through the API", "key", key.String(), "action", res.Action, "correlationId", res.CorrelationID)
	writeJSON(w, http.StatusOK, res)
}

// controlError answers a control's error: 404 for what does not exist,
// 503 on a follower, 409 for a request the state refuses.
func (s *server) controlError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, controls.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, controls.ErrNotLeader):
		writeError(w, http.StatusServiceUnavailable, err.Error())
	case errors.Is(err, controls.ErrRefused):
		writeError(w, http.StatusConflict, err.Error())
	default:
		s.internalError(w, err)
	}
}

// kindNote is what an object's reconcile state says of its kind.
func (s *server) kindNote(key events.Key) string {
	if s.opts.Controls != nil && !s.opts.Controls.KindEnabled(key.Kind) {
		return controls.NoteDisabled
	}
	return ""
}
