package main

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var mcpListenLine = regexp.MustCompile(`msg="musterd starting".* mcp_listen=(\S+)`)

// mcpAddr is the address of d's -mcp-listen listener.
func (d *runningDaemon) mcpAddr(t *testing.T) string {
	t.Helper()
	m := mcpListenLine.FindStringSubmatch(d.stderr.String())
	require.NotNil(t, m, "no mcp_listen in the log\n%s", d.stderr)
	return m[1]
}

// mcpRoleOf returns the pod's MCP role label.
func (k *kubeEnv) mcpRoleOf(t *testing.T, pod string) string {
	t.Helper()
	var p corev1.Pod
	require.NoError(t, k.cp.Client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: pod}, &p))
	return p.Labels[mcpRoleLabel]
}

// Two replicas on a real API server, each with the pod the downward API
// would name: the leader labels its pod as MCP's, once its servers run;
// the follower answers MCP with the leader's name; after a failover the new
// leader takes the label and serves the tools.
func TestE2EKubeMCPIsRoutedToTheLeader(t *testing.T) {
	k := startKube(t)
	pods := []string{"musterd-a", "musterd-b"}
	for _, name := range pods {
		require.NoError(t, k.cp.Client.Create(t.Context(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{mcpRoleLabel: mcpRoleLeader}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "musterd", Image: "musterd:latest"}}},
		}))
	}
	args := []string{"-leader-elect", "-leader-election-namespace", "default", "-leader-election-id", "musterd-e2e",
		"-leader-election-lease-duration", "4s", "-leader-election-renew-deadline", "3s", "-leader-election-retry-period", "500ms",
		"-mcp-listen", "127.0.0.1:0"}
	replicas := []*runningDaemon{k.musterd(t, append(args, "-pod-name", pods[0])...), k.musterd(t, append(args, "-pod-name", pods[1])...)}
	marker := newMarker()
	k.createServer(t, "one", marker)
	tool := "x_one_" + marker

	var leader *runningDaemon
	eventually(t, "one replica leads and runs the server", func() bool {
		var ok bool
		leader, ok = leaderOf(replicas, marker)
		return ok
	})
	li := slices.Index(replicas, leader)
	fi := 1 - li
	follower := replicas[fi]
	eventually(t, "the leader's pod is labelled MCP's and the follower's not", func() bool {
		return k.mcpRoleOf(t, pods[li]) == mcpRoleLeader && k.mcpRoleOf(t, pods[fi]) == mcpRoleFollower
	})

	// The follower answers MCP with an error naming the leader (once it has
	// observed the Lease's holder).
	for _, addr := range []string{follower.mcpAddr(t), follower.addr} {
		var last string
		eventually(t, "the follower at "+addr+" names the leader", func() bool {
			resp, err := http.Post("http://"+addr+"/mcp", "application/json", strings.NewReader(
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}`))
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, string(body))
			var answer struct{ Error struct{ Message string } }
			require.NoError(t, json.Unmarshal(body, &answer), string(body))
			last = answer.Error.Message
			return strings.Contains(last, "the leader is "+k.leaseHolder(t)+": connect to it")
		})
		assert.Contains(t, last, "this musterd replica is not the leader and runs no MCP server")
	}

	// The leader serves the server's tool on its MCP listener.
	connect := func(d *runningDaemon) *mcp.ClientSession {
		return connectMCP(t, "http://"+d.mcpAddr(t)+"/mcp/direct", mcpDial{})
	}
	eventually(t, "the leader lists "+tool, func() bool { return slices.Contains(toolNames(t, connect(leader)), tool) })

	// Failover: the leader stops; the other replica takes the Lease, runs
	// the server, then takes the label; clients that reconnect see its
	// tools.
	failover := time.Now()
	leader.stopWith(t, syscall.SIGTERM, e2eDeadline)
	eventually(t, "the new leader's pod is labelled MCP's", func() bool {
		return k.mcpRoleOf(t, pods[fi]) == mcpRoleLeader
	})
	t.Logf("the new leader took the MCP label %s after the old one stopped", time.Since(failover).Round(time.Millisecond))
	assert.Equal(t, mcpRoleFollower, k.mcpRoleOf(t, pods[li]), "the old leader gave the label up on its way out")
	assert.Contains(t, toolNames(t, connect(follower)), tool, "labelled only once its servers run")
}
