package v1alpha1

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// Patterns of the CRDs, compiled once (pattern.go).
var (
	identifierPattern    = classPattern("a-zA-Z", "a-zA-Z0-9_-") // ^[a-zA-Z][a-zA-Z0-9_-]*$
	argIdentifierPattern = classPattern("a-zA-Z", "a-zA-Z0-9_")  // ^[a-zA-Z][a-zA-Z0-9_]*$
	serverURLPattern     = regexpPattern(`^https?://[^\s/$.?#].[^\s]*$`)
	httpsURLPattern      = regexpPattern(`^https://[^\s/$.?#].[^\s]*$`)
	issuerPattern        = regexpPattern(`^https://[^/?#]+(/[^?#]*[^/?#])?$`)
	stepIDPattern        = classPattern("", "a-zA-Z0-9_-") // ^[a-zA-Z0-9_-]+$
)

// validator collects the field errors of one object. Decoding a file tells
// it which fields the file sets and on which lines; without a file (an
// object built in Go or read from an API server) errors name fields but no
// lines.
type validator struct {
	file *documentFields // nil outside files
	errs FieldErrors
	// warns are settings muster's loader accepts and ignores but its tools
	// refuse; a file's warnings (Document.Warnings), which declare refuses
	// as it refuses unknown fields. Their messages end in ignoredSuffix,
	// which FieldErrors.Refused drops.
	warns FieldErrors
}

// has mirrors CEL's has(): a field is set when it holds a non-zero value or,
// in a file, when the file sets it, even to a zero value. nonZero must be
// true whenever the field holds a non-zero value.
func (v *validator) has(p *fieldPath, nonZero bool) bool {
	if nonZero {
		return true
	}
	return v.file != nil && v.file.setsZero(p)
}

// lineOf is the line of p, or of its nearest ancestor present in the file.
func (v *validator) lineOf(p *fieldPath) int {
	if v.file == nil {
		return 0
	}
	lines := v.file.lines()
	for q := p; q != nil; q = q.parent {
		if line, ok := lines[q.String()]; ok {
			return line
		}
	}
	return lines[""]
}

// fail reports a problem with field p, and returns it for the caller to
// say its Cause.
func (v *validator) fail(p *fieldPath, format string, args ...any) *FieldError {
	return v.failAt(p, p, format, args...)
}

// failAt reports a problem with field p on the line of field at, for
// fields whose absence is the problem and that have no line of their own.
func (v *validator) failAt(p, at *fieldPath, format string, args ...any) *FieldError {
	fe := &FieldError{Line: v.lineOf(at), Field: p.String(), Path: p.elements(), Msg: fmt.Sprintf(format, args...)}
	v.errs = append(v.errs, fe)
	return fe
}

// missing is the cause of a required value that p does not have: not set,
// or set empty.
func (v *validator) missing(p *fieldPath) Cause {
	if v.has(p, false) {
		return CauseEmpty
	}
	return CauseRequired
}

// ignored warns that field p, which the file sets, is ignored: msg says
// why, and the warning reads "msg, ignored".
func (v *validator) ignored(p *fieldPath, format string, args ...any) {
	v.warns = append(v.warns, &FieldError{Line: v.lineOf(p), Field: p.String(), Path: p.elements(), Msg: fmt.Sprintf(format, args...) + ignoredSuffix})
}

// settle returns a validated document's errors and warnings: its own,
// and those of the fields unknown to its type (settleUnknown).
func (v *validator) settle(unknown []unknownField) (errs, warnings FieldErrors) {
	errs, warnings = settleUnknown(v.errs, unknown)
	if len(v.warns) > 0 {
		warnings = append(warnings, v.warns...)
		warnings.sort()
	}
	return errs, warnings
}

func (v *validator) result() FieldErrors {
	v.errs.sort()
	return v.errs
}

func (v *validator) required(p *fieldPath, value string) {
	if value == "" {
		v.fail(p, "required").Cause = v.missing(p)
	}
}

func (v *validator) pattern(p *fieldPath, value string, re *crdPattern) {
	if v.has(p, value != "") && !re.MatchString(value) {
		v.fail(p, "%q does not match %s", value, re)
	}
}

func (v *validator) maxLength(p *fieldPath, value string, limit int) {
	if len(value) <= limit {
		return // no more characters than bytes
	}
	if n := utf8.RuneCountInString(value); n > limit {
		v.fail(p, "must be at most %d characters, got %d", limit, n)
	}
}

func enum[T ~string](v *validator, p *fieldPath, value T, allowed ...T) {
	for _, a := range allowed {
		if value == a {
			return
		}
	}
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	v.fail(p, "unsupported value %q: must be one of %s", value, strings.Join(quoted, ", "))
}

// Validate checks the server against the rules of muster's MCPServer CRD:
// its enums, patterns, ranges and CEL rules, plus the requirements its
// field documentation states (a token exchange needs its endpoint and
// connector). It expects the object as an API server stores it, before or
// after Default.
func (s *MCPServer) Validate() FieldErrors {
	v := &validator{}
	s.validate(v)
	return v.result()
}

func (s *MCPServer) validate(v *validator) {
	spec := (*fieldPath)(nil).Child("spec")
	typ := spec.Child("type")
	if s.Spec.Type == "" {
		v.fail(typ, "required").Cause = v.missing(typ)
	} else {
		enum(v, typ, s.Spec.Type, MCPServerTypeStdio, MCPServerTypeStreamableHTTP, MCPServerTypeSSE)
	}
	v.pattern(spec.Child("toolPrefix"), s.Spec.ToolPrefix, identifierPattern)
	v.maxLength(spec.Child("description"), s.Spec.Description, 500)
	v.pattern(spec.Child("url"), s.Spec.URL, serverURLPattern)

	switch {
	case s.Spec.Type == MCPServerTypeStdio:
		if s.Spec.Command == "" {
			v.failAt(spec.Child("command"), typ, "required when type is stdio").Cause = CauseRequired
		}
		if headers := spec.Child("headers"); v.has(headers, s.Spec.Headers != nil) {
			v.fail(headers, "only allowed when type is streamable-http or sse")
		}
		// muster's tools refuse a stdio server that authenticates (its
		// loader and CRD do not), and nothing authenticates to a child
		// process: a file's is ignored, a tool's refused.
		if a := s.Spec.Auth; a != nil && a.Type != "" && a.Type != AuthTypeNone {
			v.ignored(spec.Child("auth").Child("type"), "%q is only supported for remote server types (streamable-http or sse)", a.Type)
		}
	case s.Spec.Type.IsRemote():
		if s.Spec.URL == "" {
			v.failAt(spec.Child("url"), typ, "required when type is streamable-http or sse").Cause = CauseRequired
		}
		if args := spec.Child("args"); v.has(args, s.Spec.Args != nil) {
			v.fail(args, "only allowed when type is stdio")
		}
	}

	if timeout := spec.Child("timeout"); v.has(timeout, s.Spec.Timeout != 0) &&
		(s.Spec.Timeout < 1 || s.Spec.Timeout > 300) {
		v.fail(timeout, "must be between 1 and 300 seconds, got %d", s.Spec.Timeout)
	}
	if s.Spec.Auth != nil {
		s.Spec.Auth.validate(v, spec.Child("auth"))
	}
	if f := s.Spec.Family; f != nil {
		family := spec.Child("family")
		for _, field := range []struct {
			name, value string
			re          *crdPattern
		}{{"name", f.Name, identifierPattern}, {"instanceArg", f.InstanceArg, argIdentifierPattern}} {
			p := family.Child(field.name)
			v.required(p, field.value)
			v.pattern(p, field.value, field.re)
		}
	}
}

func (a *MCPServerAuth) validate(v *validator, p *fieldPath) {
	if typ := p.Child("type"); v.has(typ, a.Type != "") {
		enum(v, typ, a.Type, AuthTypeOAuth, AuthTypeNone)
	}
	if te := a.TokenExchange; te != nil {
		tp := p.Child("tokenExchange")
		v.pattern(tp.Child("dexTokenEndpoint"), te.DexTokenEndpoint, httpsURLPattern)
		v.pattern(tp.Child("expectedIssuer"), te.ExpectedIssuer, httpsURLPattern)
		v.pattern(tp.Child("connectorId"), te.ConnectorID, identifierPattern)
		if te.Enabled {
			if te.DexTokenEndpoint == "" {
				v.failAt(tp.Child("dexTokenEndpoint"), tp.Child("enabled"), "required when enabled").Cause = CauseRequired
			}
			if te.ConnectorID == "" {
				v.failAt(tp.Child("connectorId"), tp.Child("enabled"), "required when enabled").Cause = CauseRequired
			}
		}
		if ref := te.ClientCredentialsSecretRef; ref != nil {
			v.required(tp.Child("clientCredentialsSecretRef").Child("name"), ref.Name)
		}
	}
	if as := a.AuthorizationServer; as != nil {
		ap := p.Child("authorizationServer")
		v.required(ap.Child("issuer"), as.Issuer)
		v.pattern(ap.Child("issuer"), as.Issuer, issuerPattern)
		if a.Type != AuthTypeOAuth {
			v.fail(ap, "only valid when type is oauth")
		}
		if a.ForwardToken {
			v.fail(ap, "forwardToken bypasses per-backend OAuth; set one or the other, not both")
		}
		if a.TokenExchange != nil && a.TokenExchange.Enabled {
			v.fail(ap, "tokenExchange has its own issuer/endpoint config; set one or the other, not both")
		}
	}
}

// Validate checks the workflow against the rules of muster's Workflow CRD:
// at least one step, exactly one of tool, forEach or parallel per step,
// conditions of exactly one kind, argument types, patterns and lengths. It
// also requires step IDs to be unique across the whole workflow, nested
// and onFailure steps included, as results are looked up by ID.
func (w *Workflow) Validate() FieldErrors {
	v := &validator{}
	w.validate(v)
	return v.result()
}

func (w *Workflow) validate(v *validator) {
	spec := (*fieldPath)(nil).Child("spec")
	v.maxLength(spec.Child("description"), w.Spec.Description, 1000)
	for _, name := range slices.Sorted(maps.Keys(w.Spec.Args)) {
		arg, p := w.Spec.Args[name], spec.Child("args").Key(name)
		if arg.Type == "" {
			v.fail(p.Child("type"), "required").Cause = v.missing(p.Child("type"))
		} else {
			enum(v, p.Child("type"), arg.Type,
				ArgTypeString, ArgTypeInteger, ArgTypeBoolean, ArgTypeNumber, ArgTypeObject, ArgTypeArray)
		}
		v.maxLength(p.Child("description"), arg.Description, 500)
	}

	ids := map[string]*fieldPath{} // step ID → path of its first use
	steps := spec.Child("steps")
	if len(w.Spec.Steps) == 0 {
		cause := CauseRequired
		if v.has(steps, w.Spec.Steps != nil) {
			cause = CauseEmpty
		}
		v.fail(steps, "a workflow needs at least one step").Cause = cause
	}
	for i := range w.Spec.Steps {
		w.Spec.Steps[i].validate(v, steps.Index(i), ids)
	}
	for i := range w.Spec.OnFailure {
		w.Spec.OnFailure[i].validate(v, spec.Child("onFailure").Index(i), ids)
	}
}

func validateStepID(v *validator, p *fieldPath, id string, ids map[string]*fieldPath) {
	v.required(p, id)
	v.pattern(p, id, stepIDPattern)
	v.maxLength(p, id, 63)
	if id == "" {
		return
	}
	if first, dup := ids[id]; dup {
		fe := v.fail(p, "duplicate step id %q (first used at %s)", id, first)
		fe.Cause, fe.First = CauseDuplicate, first.elements()
		return
	}
	ids[id] = p
}

func (s *WorkflowStep) validate(v *validator, p *fieldPath, ids map[string]*fieldPath) {
	validateStepID(v, p.Child("id"), s.ID, ids)
	kinds := make([]string, 0, 3)
	if tool := p.Child("tool"); v.has(tool, s.Tool != "") {
		kinds = append(kinds, "tool")
		if s.Tool == "" {
			v.fail(tool, "must not be empty").Cause = CauseEmpty
		}
	}
	if s.ForEach != nil {
		kinds = append(kinds, "forEach")
	}
	if v.has(p.Child("parallel"), s.Parallel != nil) {
		kinds = append(kinds, "parallel")
	}
	switch len(kinds) {
	case 0:
		v.fail(p, "exactly one of tool, forEach, or parallel must be set, got none").Cause = CauseOneOf
	case 1:
	default:
		fe := v.fail(p, "exactly one of tool, forEach, or parallel must be set, got %s", strings.Join(kinds, " and "))
		fe.Cause, fe.Fields = CauseOneOf, kinds
	}
	if s.Condition != nil {
		s.Condition.validate(v, p.Child("condition"))
	}
	v.maxLength(p.Child("description"), s.Description, 500)

	if fe := s.ForEach; fe != nil {
		fp := p.Child("forEach")
		v.required(fp.Child("items"), fe.Items)
		body := fp.Child("steps")
		if len(fe.Steps) == 0 {
			cause := CauseRequired
			if v.has(body, fe.Steps != nil) {
				cause = CauseEmpty
			}
			v.fail(body, "must have at least one step").Cause = cause
		}
		for i := range fe.Steps {
			fe.Steps[i].validate(v, body.Index(i), ids)
		}
	}
	if group := p.Child("parallel"); v.has(group, s.Parallel != nil) {
		if len(s.Parallel) == 0 {
			v.fail(group, "must have at least one step").Cause = CauseEmpty
		}
		for i := range s.Parallel {
			s.Parallel[i].validate(v, group.Index(i), ids)
		}
	}
}

func (s *WorkflowSubStep) validate(v *validator, p *fieldPath, ids map[string]*fieldPath) {
	validateStepID(v, p.Child("id"), s.ID, ids)
	v.required(p.Child("tool"), s.Tool)
	if s.Condition != nil {
		s.Condition.validate(v, p.Child("condition"))
	}
	v.maxLength(p.Child("description"), s.Description, 500)
}

func (c *WorkflowCondition) validate(v *validator, p *fieldPath) {
	template := v.has(p.Child("template"), c.Template != "")
	var set []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"template", template}, {"tool", v.has(p.Child("tool"), c.Tool != "")}, {"fromStep", v.has(p.Child("fromStep"), c.FromStep != "")}} {
		if f.set {
			set = append(set, f.name)
		}
	}
	if len(set) != 1 {
		fe := v.fail(p, "exactly one of template, tool, or fromStep must be set")
		fe.Cause, fe.Fields = CauseOneOf, set
	}
	if !template && c.Expect == nil && c.ExpectNot == nil {
		fe := v.fail(p, "a tool or fromStep condition requires expect or expectNot")
		fe.Cause, fe.Fields = CauseRequired, []string{"expect", "expectNot"}
	}
}
