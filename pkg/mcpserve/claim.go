package mcpserve

// Claimer is a Provider (or the Backend) that also answers for names it
// does not list. A workflow that is declared but cannot run is no tool, yet
// a call of it must say why, as muster's does ("workflow X is not available
// (missing required tools: …)"), not that no such tool exists.
type Claimer interface {
	Claims(name string) bool
}

// claimed routes name to the first Provider that claims it, or else to
// the Backend if it claims it: a tool whose server stopped running is no
// tool either, yet its call must say that the server is not running, as
// muster's does ("server not found"), not that no such tool exists.
func (s *Server) claimed(name string) (route, bool) {
	for _, p := range s.opts.Providers {
		if c, ok := p.(Claimer); ok && c.Claims(name) {
			return route{callee: p, source: "provider"}, true
		}
	}
	if c, ok := s.opts.Backend.(Claimer); ok && c.Claims(name) {
		return route{callee: s.opts.Backend, source: "server"}, true
	}
	return route{}, false
}
