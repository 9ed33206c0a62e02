package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// homes says where each concept of the MCP side lives: one package each,
// and one way in. The package doc.go of each says more.
var homes = []struct{ concept, home string }{
	{"the views and sessions MCP clients connect to (/mcp, /mcp/direct, /sse), muster's meta-tools, list_changed, resource subscriptions", "pkg/mcpserve"},
	{"tool calls: the exposed set (first source wins) in the caller's per-owner view, the one way in for every call (the endpoint's and the workflow steps'), its caller (router.Caller), its log line and metrics", "pkg/router"},
	{"the running servers' tools under their exposed names, families, exposure policies (musterd.io/exposure) and name conflicts, the tools of servers gone, and each owner's per-owner view (the servers it connects to on its own)", "pkg/catalogue"},
	{"the live sessions to the managed servers (shared, each client's own: lanes, and each user's own: user connections, with the user's bearer token per request), the calls made in them, and what a server asks of its client", "pkg/supervisor"},
	{"the client a call comes from, as a managed server sees it (peer.Peer): the endpoint implements it, the supervisor reads it", "pkg/peer"},
	{"who a request comes from: user, session, and the owner per-user state is keyed by", "pkg/identity"},
	{"checking a caller's bearer token against the issuers musterd trusts (signature, issuer, audience, expiry, claims)", "pkg/oauth/verify"},
	{"OAuth state at rest: tokens, login states and registrations, in memory or Valkey, encrypted", "pkg/oauth/store"},
	{"the core tools, read and write (core_…), the execution tools included", "pkg/coretools"},
	{"declaring a tool musterd implements: its arguments, input schema, argument check and results", "pkg/tooldef"},
	{"workflow runs (workflow_…) and the executions they leave", "pkg/workflowrun"},
	{"following the bus at a reader's pace (bus.Follow)", "pkg/bus"},
	{"muster's view of the events, and following it (core_events)", "pkg/musterevents"},
	{"the live page: its static files, embedded and served under /ui/", "pkg/ui"},
	{"musterd as OAuth authorization server: registration, /oauth/authorize through the identity provider, /oauth/callback, musterd's own tokens (zitadel's op.Provider), their check at the endpoint", "pkg/oauth/authserver"},
	{"musterd as OAuth client of protected servers: discovery, login through /oauth/proxy, the users' tokens for them", "pkg/oauth/client"},
	{"the aggregator.oauth configuration: its keys, muster's defaults, its checks and its secrets (config.Secret)", "pkg/oauth/config"},
}

// goFile is one non-test Go file of the module, parsed.
type goFile struct {
	pkg, name string
	file      *ast.File
}

func parseModule(t *testing.T) []goFile {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	var files []goFile
	fset := token.NewFileSet()
	for _, top := range []string{"pkg", "cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			files = append(files, goFile{pkg: filepath.ToSlash(rel), name: filepath.Base(path), file: f})
			return nil
		})
		require.NoError(t, err)
	}
	return files
}

// selectorCalls reports each pkg.Name referenced in f (a call, a type in a
// composite literal, …) as "pkg.Name".
func selectors(f *ast.File) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				out = append(out, id.Name+"."+sel.Sel.Name)
			}
		}
		return true
	})
	return out
}

var coreToolName = regexp.MustCompile(`^core_[a-z_]+$`)

// Each concept's home is the only place that does what makes the concept,
// so that a second home cannot grow back unnoticed.
func TestEachConceptOfTheMCPSideHasOneHome(t *testing.T) {
	for _, h := range homes {
		_, ok := allowed[h.home]
		assert.True(t, ok, "%s: %s has an import rule", h.concept, h.home)
	}
	assert.Empty(t, secondHomes(parseModule(t)))
}

// secondHomes lists what files of pkg/ do outside the home of its concept.
func secondHomes(files []goFile) []string {
	var wrong []string
	for _, f := range files {
		if !strings.HasPrefix(f.pkg, "pkg/") {
			continue // cmd and internal hold fakes and benchmarks of their own
		}
		where := f.pkg + "/" + f.name
		for _, s := range selectors(f.file) {
			switch s {
			case "mcp.NewServer", "mcp.NewStreamableHTTPHandler", "mcp.SSEServerTransport", "mcp.StreamableHTTPHandler":
				if f.pkg != "pkg/mcpserve" {
					wrong = append(wrong, where+": serves MCP ("+s+"): the views and sessions are pkg/mcpserve's")
				}
			case "mcp.NewClient", "mcp.ClientOptions":
				if f.pkg != "pkg/supervisor" {
					wrong = append(wrong, where+": opens an MCP session to a server ("+s+"): the sessions to the managed servers are pkg/supervisor's")
				}
			case "tooldef.Tool":
				if f.pkg != "pkg/coretools" && f.pkg != "pkg/mcpserve" {
					wrong = append(wrong, where+": declares a tool: the core tools are pkg/coretools', the meta-tools pkg/mcpserve's")
				}
			case "http.FileServer", "http.FileServerFS":
				if f.pkg != "pkg/ui" {
					wrong = append(wrong, where+": serves static files ("+s+"): the live page is pkg/ui's")
				}
			case "op.NewProvider", "op.NewOpenIDProvider":
				if !strings.HasPrefix(f.pkg, "pkg/oauth/") {
					wrong = append(wrong, where+": makes an OpenID provider ("+s+"): musterd's authorization server is pkg/oauth/authserver's")
				}
			case "bus.SubscriberOptions", "bus.Subscribe":
				if f.pkg == "pkg/api" || f.pkg == "pkg/coretools" {
					wrong = append(wrong, where+": an edge follows the bus only through bus.Follow")
				}
			}
		}
		ast.Inspect(f.file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			if coreToolName.MatchString(v) && f.pkg != "pkg/coretools" {
				wrong = append(wrong, where+": names core tool "+v+": the core tools are pkg/coretools'")
			}
			if strings.EqualFold(v, "mcp tool call") && f.pkg != "pkg/router" {
				wrong = append(wrong, where+": logs a tool call: a call is logged once, by pkg/router")
			}
			if strings.HasPrefix(v, "aggregator.oauth") && f.pkg != "pkg/oauth/config" {
				wrong = append(wrong, where+": reads the OAuth section ("+v+"): it is read and checked once, by pkg/oauth/config")
			}
			return true
		})
	}
	return wrong
}

// The check finds what it looks for: each rule catches a file breaking it,
// and lets its home do it.
func TestTheHomesCheckCatchesASecondHome(t *testing.T) {
	file := func(pkg, src string) goFile {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\n"+src, 0)
		require.NoError(t, err)
		return goFile{pkg: pkg, name: "x.go", file: f}
	}
	for _, c := range []struct {
		src, home, stray string
	}{
		{`var s = mcp.NewServer(nil, nil)`, "pkg/mcpserve", "pkg/router"},
		{`var t = &tooldef.Tool{}`, "pkg/coretools", "pkg/workflowrun"},
		{`var c = mcp.NewClient(nil, nil)`, "pkg/supervisor", "pkg/router"},
		{`var o = bus.SubscriberOptions{}`, "pkg/mcpserve", "pkg/api"},
		{`const name = "core_events"`, "pkg/coretools", "pkg/mcpserve"},
		{`var h = http.FileServerFS(nil)`, "pkg/ui", "pkg/api"},
		{`func f() { log.Debug("MCP tool call") }`, "pkg/router", "pkg/mcpserve"},
		{`const section = "aggregator.oauth.server"`, "pkg/oauth/config", "pkg/mcpserve"},
		{`var p, _ = op.NewProvider(nil, nil, nil)`, "pkg/oauth/authserver", "pkg/api"},
		{`var p, _ = op.NewOpenIDProvider("", nil, nil)`, "pkg/oauth/authserver", "pkg/mcpserve"},
	} {
		assert.Empty(t, secondHomes([]goFile{file(c.home, c.src)}), "%s in %s", c.src, c.home)
		assert.Len(t, secondHomes([]goFile{file(c.stray, c.src)}), 1, "%s in %s", c.src, c.stray)
	}
}
