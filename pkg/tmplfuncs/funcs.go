package tmplfuncs

import (
	"maps"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

// removed are the sprig functions templates do not get, and why.
var removed = map[string]string{
	"env":           "reads the daemon's environment",
	"expandenv":     "reads the daemon's environment",
	"getHostByName": "a network call",
}

// funcs is built once: sprig.TxtFuncMap allocates a fresh map of ~200
// entries each call.
var funcs = func() template.FuncMap {
	m := sprig.TxtFuncMap()
	for name := range removed {
		delete(m, name)
	}
	bound(m)
	return m
}()

// Funcs returns the functions templates may call: a copy, which the caller
// may extend.
func Funcs() template.FuncMap { return maps.Clone(funcs) }
