package supervisor_test

import "testing"

// freeze would stop the process pid; Windows has no SIGSTOP, so a test that
// needs a frozen server is skipped there.
func freeze(t *testing.T, _ int) {
	t.Skip("freezing a process (SIGSTOP) is not supported on windows")
}
