package main

// The official MCP conformance suite through musterd: the go-sdk's
// conformance server, managed by musterd twice (as a stdio server, and as
// a remote streamable-HTTP server), run against each one's view
// /mcp/servers/<name>, and compared check for check with the same suite
// run straight against the same server over HTTP.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/internal/conformancetest"
	"github.com/musterd/musterd/pkg/supervisor"
)

func TestE2EConformanceSuiteThroughAServersView(t *testing.T) {
	bin := conformancetest.BuildEverythingServer(t)
	url := conformancetest.ServeHTTP(t, bin)
	straight := conformancetest.Run(t, url)
	assert.Empty(t, straight.Failed(), "the suite passes straight against the server")

	e := startFS(t)
	// The stdio server runs once per client session that calls it, so that
	// its requests (sampling, elicitation) and log messages reach the
	// client whose call raised them; the remote one gets a session per
	// such client by default.
	e.write(t, "mcpservers/conf-stdio.yaml", annotatedServerYAML("conf-stdio",
		map[string]string{supervisor.ClientSessionsAnnotation: string(supervisor.ClientSessionsPerClient)},
		"type: stdio", "autoStart: true", "command: "+yamlValue(bin)))
	e.write(t, "mcpservers/conf-http.yaml", annotatedServerYAML("conf-http", nil,
		"type: streamable-http", "autoStart: true", "url: "+yamlValue(url)))
	e.waitServer(t, "conf-stdio", "running", func(s serverObject) bool { return s.Status.State == "Running" })
	e.waitServer(t, "conf-http", "connected", func(s serverObject) bool { return s.Status.State == "Connected" })

	for _, name := range []string{"conf-stdio", "conf-http"} {
		t.Run(name, func(t *testing.T) {
			through := conformancetest.Run(t, "http://"+e.addr+"/mcp/servers/"+name)
			assert.Empty(t, conformancetest.Diff(straight, through), "checks whose outcome differs through musterd")
			t.Logf("straight: %d checks passed; through %s's view: %d passed, %d failed",
				straight.Count("SUCCESS"), name, through.Count("SUCCESS"), len(through.Failed()))
		})
	}
}

// annotatedServerYAML is an MCPServer with annotations.
func annotatedServerYAML(name string, annotations map[string]string, spec ...string) string {
	doc := mcpServerYAML(name, spec...)
	if len(annotations) == 0 {
		return doc
	}
	meta := "metadata:\n  name: " + name + "\n  annotations:\n"
	for k, v := range annotations {
		meta += fmt.Sprintf("    %s: %s\n", k, yamlValue(v))
	}
	return strings.Replace(doc, "metadata:\n  name: "+name+"\n", meta, 1)
}
