package supervisor

import (
	"context"
	"errors"
	"time"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// work applies the specs Ensure asks for on e, one after the other, on a
// goroutine of the supervisor's own: it retires what runs another spec and
// starts the one asked for. It holds e's op slot throughout, so no Stop
// overlaps it; a Stop cancels its start and waits for it to end. It ends
// when nothing more is asked for, or the server is being stopped.
func (s *Supervisor) work(e *entry) {
	defer s.workers.Done()
	e.op <- struct{}{} // a Stop under way holds it; this goroutine then finds the entry forgotten
	defer e.unlock()
	for {
		s.mu.Lock()
		if e.removed || e.stopping > 0 || s.shutdown || e.want == nil {
			e.busy = false
			e.target = ""
			close(e.settled)
			if e.replacing {
				// The replacement is over (the new instance runs, or
				// failed): calls waiting for it look again (calls.go).
				e.replacing = false
				s.broadcastLocked()
			}
			s.mu.Unlock()
			return
		}
		want := *e.want
		e.want = nil
		e.target = want.hash
		current := e.inst
		if current != nil && e.obs.Running() && current.hash == want.hash {
			s.mu.Unlock()
			continue // asked back for what runs
		}
		s.mu.Unlock()

		if current != nil {
			s.drain(context.Background(), e, current)   // its calls finish first, within DrainTimeout (calls.go)
			_ = s.retire(context.Background(), current) // gone: after StopGrace, killed
			s.mu.Lock()
			e.inst = nil
			if e.obs.Running() {
				e.obs.State = stoppedState(e.remote)
				e.obs.PID = 0
				e.obs.Tools, e.obs.ToolDefs, e.obs.Init, e.obs.ListedAt = nil, nil, nil, time.Time{}
				s.changedLocked(e)
			}
			if e.want == nil {
				e.want = &want // unless another spec was asked for meanwhile
			}
			s.mu.Unlock()
			continue
		}
		s.start(e, want)
	}
}

// start starts want's spec for e, whose op slot the caller holds, and
// records the outcome: Running or Connected, Failed (which arms the
// backoff), Stopped when Stop cancelled it, or nothing yet when Ensure
// asked for another spec.
func (s *Supervisor) start(e *entry, want desired) {
	spec, hash := want.spec, want.hash
	inst := s.newInstance(e.key, spec, hash)
	inst.protocolPin = want.protocolPin

	s.mu.Lock()
	switch {
	case e.stopping > 0 || s.shutdown:
		inst.cancel(errStopping)
	case e.want != nil:
		inst.cancel(errSuperseded)
	default:
		// The backoff holds here too, for a server that failed since Ensure
		// asked: whoever asks, no start comes before its NextRetryAfter.
		if _, blocked := e.gate.blocked(time.Now(), hash); blocked && !e.obs.Running() {
			inst.cancel(errReleased)
		}
	}
	if inst.ctx.Err() != nil {
		e.target = ""
		s.mu.Unlock()
		return
	}
	e.cancelStart = inst.cancel
	s.mu.Unlock()

	// A slot of StartConcurrency; Stop and a new spec cancel the wait.
	select {
	case s.startSlots <- struct{}{}:
	case <-inst.ctx.Done():
		s.mu.Lock()
		e.cancelStart = nil
		e.target = ""
		if errors.Is(context.Cause(inst.ctx), errStopping) {
			s.cancelledLocked(e)
		}
		s.mu.Unlock()
		return
	}
	defer func() { <-s.startSlots }()

	timeout := s.startTimeout(spec)
	expire := time.AfterFunc(timeout, func() { inst.cancel(&startTimeoutError{timeout: timeout}) })
	s.mu.Lock()
	e.remote = spec.Type.IsRemote()
	if e.ran && !e.remote {
		e.obs.RestartCount++ // a process that ran is started again
	}
	e.ran = false
	e.authRequired = ""
	e.obs.State = startingState(e.remote)
	e.obs.PID = 0
	e.obs.Tools, e.obs.ToolDefs, e.obs.Init, e.obs.ListedAt = nil, nil, nil, time.Time{}
	e.obs.LastError = ""
	e.obs.ToolPrefix = spec.ToolPrefix
	e.obs.Family = spec.Family.DeepCopy()
	e.obs.LastAttempt = time.Now()
	e.obs.NextRetryAfter = time.Time{}
	e.obs.SpecHash = hash
	s.changedLocked(e)
	s.mu.Unlock()

	launchErr := inst.launch()
	expire.Stop()
	if launchErr == nil && inst.ctx.Err() != nil {
		// Cancelled between a successful launch and here.
		inst.teardown(0)
		launchErr = context.Cause(inst.ctx)
	}

	s.mu.Lock()
	// The outcome is in, in this critical section: an Ensure from here on
	// sees it (Running, or Failed and backing off), not a start under way.
	e.cancelStart = nil
	e.target = ""
	if launchErr == nil {
		e.inst = inst
		e.ran = true
		e.dropped = false
		e.obs.State = runningState(e.remote)
		e.obs.PID = inst.pid()
		now := time.Now()
		e.obs.Tools, e.obs.ToolDefs = toolNames(inst.tools), inst.tools
		e.obs.Init = inst.session.InitializeResult()
		e.obs.ListedAt = now
		e.obs.LastError = "" // the past failure stays in LastFailure
		e.obs.LastConnected = now
		s.changedLocked(e)
		obs := e.obs
		s.mu.Unlock()
		s.log.Info("mcp server started", "key", e.key.String(), "type", spec.Type, "pid", obs.PID,
			"tools", len(obs.Tools), "restartCount", obs.RestartCount)
		go s.monitor(e, inst)
		return
	}

	cause := context.Cause(inst.ctx)
	switch {
	case errors.Is(cause, errStopping):
		// Stop wants the server gone: no failure of the server's.
		s.cancelledLocked(e)
		s.mu.Unlock()
		return
	case errors.Is(cause, errSuperseded):
		// Ensure asked for another spec, which starts next: no failure
		// either, and no Stopped in between.
		s.mu.Unlock()
		s.log.Info("mcp server start cancelled for a changed spec", "key", e.key.String())
		return
	}
	if authErr, ok := errors.AsType[*AuthRequiredError](launchErr); ok {
		s.authRequiredLocked(e, hash, authErr)
		s.mu.Unlock()
		s.log.Info("mcp server requires authorization", "key", e.key.String(), "error", authErr.Error())
		return
	}
	msg := launchErr.Error() // made by launch, scrubbed
	state := v1alpha1.MCPServerStateFailed
	if e.remote && e.dropped {
		// A reconnect refused: still Disconnected, retried on the backoff.
		state = v1alpha1.MCPServerStateDisconnected
	}
	obs := s.failLocked(e, hash, msg, state)
	s.mu.Unlock()
	s.logFailure(e.key, obs)
}

// authRequiredLocked records a start whose server answered 401: Auth
// Required, with no failure counted and no retry armed. Ensure leaves it
// so while the spec stays hash (authrequired.go).
func (s *Supervisor) authRequiredLocked(e *entry, hash string, err *AuthRequiredError) {
	e.authRequired = hash
	e.dropped = false
	e.obs.State = v1alpha1.MCPServerStateAuthRequired
	e.obs.PID = 0
	e.obs.Tools, e.obs.ToolDefs, e.obs.Init, e.obs.ListedAt = nil, nil, nil, time.Time{}
	e.obs.LastError = err.Error()
	e.obs.NextRetryAfter = time.Time{}
	s.changedLocked(e)
}

// cancelledLocked records a start that Stop cancelled.
func (s *Supervisor) cancelledLocked(e *entry) {
	e.obs.State = stoppedState(e.remote)
	e.obs.PID = 0
	e.obs.Tools, e.obs.ToolDefs, e.obs.Init, e.obs.ListedAt = nil, nil, nil, time.Time{}
	s.changedLocked(e)
}

// startTimeout is what bounds a start of spec: its timeout, or
// Options.StartTimeout when it sets none.
func (s *Supervisor) startTimeout(spec v1alpha1.MCPServerSpec) time.Duration {
	return startTimeout(spec, s.opts.StartTimeout)
}

func startTimeout(spec v1alpha1.MCPServerSpec, fallback time.Duration) time.Duration {
	if spec.Timeout > 0 {
		return time.Duration(spec.Timeout) * time.Second
	}
	return fallback
}

// specHash identifies spec's fields that change what runs, the start
// timeout as it applies.
func (s *Supervisor) specHash(spec v1alpha1.MCPServerSpec) string {
	return specHash(s.hashKey, spec, s.startTimeout(spec))
}
