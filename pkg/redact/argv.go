package redact

import "strings"

// Argv returns a command line's arguments fit to show: each through
// String (so "--token=sk-…" and "https://u:p@h" lose their secrets), and
// the argument after a flag whose name is secret-looking by IsSecretKey
// ("--token X", "--api-key X", "-password X") replaced whole, since
// nothing in X itself says it is a secret. args is not changed.
func Argv(args []string) []string {
	if args == nil {
		return nil
	}
	out := make([]string, len(args))
	for i, a := range args {
		if i > 0 && secretFlag(args[i-1]) {
			out[i] = redacted
			continue
		}
		out[i] = String(a)
	}
	return out
}

// ArgvSecrets returns the values Argv hides as a flag's value: the
// argument after a secret-looking flag, and the value of a secret-looking
// --flag=value. A supervisor scrubs them from what its child prints.
func ArgvSecrets(args []string) []string {
	var secrets []string
	for i, a := range args {
		if i > 0 && secretFlag(args[i-1]) {
			secrets = append(secrets, a)
			continue
		}
		if name, value, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "-") && isSecretKey(name) && value != "" {
			secrets = append(secrets, value)
		}
	}
	return secrets
}

// secretFlag reports whether a is a flag without a value of its own
// ("--token", not "--token=x") whose name is secret-looking.
func secretFlag(a string) bool {
	if !strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
		return false
	}
	name := strings.TrimLeft(a, "-")
	return name != "" && isSecretKey(name)
}
