package v1alpha1

// Default fills in the defaults muster's CRD declares for fields left unset
// (holding their zero value), as an API server would on admission.
func (s *MCPServer) Default() {
	if s.Spec.Timeout == 0 {
		s.Spec.Timeout = DefaultMCPServerTimeout
	}
	a := s.Spec.Auth
	if a == nil {
		return
	}
	if a.Type == "" {
		a.Type = AuthTypeNone
	}
	if te := a.TokenExchange; te != nil {
		if te.Scopes == "" {
			te.Scopes = DefaultTokenExchangeScopes
		}
		if ref := te.ClientCredentialsSecretRef; ref != nil {
			if ref.ClientIDKey == "" {
				ref.ClientIDKey = DefaultClientIDKey
			}
			if ref.ClientSecretKey == "" {
				ref.ClientSecretKey = DefaultClientSecretKey
			}
		}
	}
}

// Default fills in the defaults muster's CRD declares for fields left unset
// (holding their zero value), as an API server would on admission.
func (w *Workflow) Default() {
	for i := range w.Spec.Steps {
		if fe := w.Spec.Steps[i].ForEach; fe != nil && fe.As == "" {
			fe.As = DefaultForEachVariable
		}
	}
}
