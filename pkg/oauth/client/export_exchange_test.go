package client

// Kept is how many exchanged tokens e keeps.
func (e *Exchanger) Kept() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, en := range e.entries {
		en.mu.Lock()
		if en.token != nil {
			n++
		}
		en.mu.Unlock()
	}
	return n
}
