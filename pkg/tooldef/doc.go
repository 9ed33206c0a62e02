// Package tooldef declares the tools musterd implements itself: muster's
// meta-tools (package mcpserve) and its core tools (package coretools).
//
// A Tool is a name, a description, its arguments as muster declares them
// (name, JSON type, required, description, default) and the function that
// answers a call. From that one declaration come the input schema every
// client sees (Definition) and the check of a call's arguments (Check), so
// the schema and the check cannot disagree.
//
// Place: a leaf beside the router. It knows nothing of sessions, views or
// the pipeline; the packages that implement tools use it, the router and
// the endpoint call what they declare.
//
// Why not the go-sdk's typed mcp.AddTool: these tools are answered on
// three paths (muster's view through call_tool, /mcp/direct natively, and
// workflow steps through the router), with muster's argument metadata and
// texts, and the core tools that change definitions hand arguments they
// do not declare on to the definition decoder, which names them. AddTool
// binds a handler to one mcp.Server and answers argument errors with the
// JSON-schema validator's texts.
//
// Guarantees:
//
//   - Definition's input schema is {"type":"object","properties":…} with
//     each argument's type, description and default, and "required" when
//     any argument is; it is built once per Tool.
//   - Check refuses, naming the tool and the argument, a required argument
//     missing (or an empty string), and an argument of another JSON type
//     ("an integer" passes where a number is declared). Arguments not
//     declared pass through untouched, as muster's do. A Tool marked
//     SelfChecked is checked by its own call only (its texts are muster's).
//   - Results are one text item; JSON answers are encoded without HTML
//     escaping, so URLs keep their &.
package tooldef
