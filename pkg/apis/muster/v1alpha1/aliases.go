package v1alpha1

import (
	"reflect"
	"strings"
)

// snakeCaseTypes are the workflow types whose fields muster accepts in
// snake_case as well as camelCase (allow_failure, from_step, expect_not,
// json_path, on_failure): the spellings of its structured tools, which
// workflow authors carry into files.
var snakeCaseTypes = map[reflect.Type]bool{
	reflect.TypeFor[WorkflowSpec]():                 true,
	reflect.TypeFor[ArgDefinition]():                true,
	reflect.TypeFor[WorkflowStep]():                 true,
	reflect.TypeFor[WorkflowSubStep]():              true,
	reflect.TypeFor[WorkflowForEach]():              true,
	reflect.TypeFor[WorkflowCondition]():            true,
	reflect.TypeFor[WorkflowConditionExpectation](): true,
}

// camelField returns the field of t that key spells in snake_case
// ("allow_failure" → "allowFailure"), if t accepts that spelling.
func camelField(t reflect.Type, key string, fields map[string]reflect.Type) (string, bool) {
	if !snakeCaseTypes[t] || !strings.Contains(key, "_") {
		return "", false
	}
	parts := strings.Split(key, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] == "" {
			return "", false
		}
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	camel := strings.Join(parts, "")
	_, ok := fields[camel]
	return camel, ok
}
