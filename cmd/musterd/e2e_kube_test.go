package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/musterd/musterd/internal/kubetest"
	"github.com/musterd/musterd/internal/proctest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// kubeEnv is a real kube-apiserver and etcd (envtest) with musterd's CRDs.
type kubeEnv struct {
	cp         *kubetest.ControlPlane
	kubeconfig string
}

func startKube(t *testing.T) *kubeEnv {
	t.Helper()
	cp := kubetest.Start(t, kubetest.Options{})
	t.Logf("control plane up in %s", cp.StartDuration)
	return &kubeEnv{cp: cp, kubeconfig: cp.Kubeconfig(t, nil)}
}

// musterd starts the real binary in Kubernetes mode against k.
func (k *kubeEnv) musterd(t *testing.T, args ...string) *runningDaemon {
	t.Helper()
	d := startDaemon(t, append([]string{"-kubernetes", "-kubeconfig", k.kubeconfig, "-config-dir", t.TempDir(), "-debounce", "20ms"}, args...)...)
	t.Cleanup(func() {
		if t.Failed() {
			log := d.stderr.String()
			t.Logf("musterd's log (last 8 KiB):\n%s", log[max(0, len(log)-8<<10):])
		}
	})
	return d
}

// createServer declares an mcp-fake stdio server offering the tool marker.
func (k *kubeEnv) createServer(t *testing.T, name, marker string) {
	t.Helper()
	require.NoError(t, k.cp.Client.Create(t.Context(), &v1alpha1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, AutoStart: true,
			Command: fakeServer(), Args: []string{"-tools", marker}},
	}))
}

func (k *kubeEnv) server(t *testing.T, name string) (*v1alpha1.MCPServer, bool) {
	t.Helper()
	var s v1alpha1.MCPServer
	err := k.cp.Client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &s)
	if err != nil {
		return nil, false
	}
	return &s, true
}

// waitStatus polls the custom resource until it has a status and its
// status subresource satisfies cond.
func (k *kubeEnv) waitStatus(t *testing.T, name, what string, cond func(*v1alpha1.MCPServer) bool) *v1alpha1.MCPServer {
	t.Helper()
	var last *v1alpha1.MCPServer
	eventually(t, "MCPServer "+name+" "+what, func() bool {
		s, ok := k.server(t, name)
		last = s
		return ok && s.Status != nil && cond(s)
	})
	return last
}

// runningGen is a status that says the server runs generation gen with
// tool (exposed as x_<name>_<tool>).
func runningGen(name, tool string, gen int64) func(*v1alpha1.MCPServer) bool {
	return func(s *v1alpha1.MCPServer) bool {
		st := s.Status
		ready := apimeta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
		return st.State == v1alpha1.MCPServerStateRunning && st.ObservedGeneration == gen && s.Generation == gen &&
			slices.Equal(st.Tools, []string{"x_" + name + "_" + tool}) && st.ToolCount == 1 &&
			ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == gen
	}
}

var reconcileStarted = regexp.MustCompile(`"type":\s*"ReconciliationStarted"`)

// reconcileStarts counts the ReconciliationStarted among a resource's
// recent events (the API keeps the latest 20).
func (d *runningDaemon) reconcileStarts(t *testing.T, name string) int {
	t.Helper()
	code, body := d.get(t, "/api/v1/resources/mcpservers/default/"+name+"/events")
	require.Equal(t, http.StatusOK, code, body)
	return len(reconcileStarted.FindAllString(body, -1))
}

// kubeEvents returns the Events on MCPServer default/name as
// "Type Reason: note", sorted.
func (k *kubeEnv) kubeEvents(t *testing.T, name string) []string {
	t.Helper()
	var list eventsv1.EventList
	require.NoError(t, k.cp.Client.List(t.Context(), &list, client.InNamespace("default")))
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == v1alpha1.KindMCPServer && e.Regarding.Name == name {
			out = append(out, e.Type+" "+e.Reason+": "+e.Note)
		}
	}
	slices.Sort(out)
	return out
}

// kubectlGetMCPS runs the built kubectl, logs its table and returns it.
func (k *kubeEnv) kubectlGetMCPS(t *testing.T) string {
	t.Helper()
	out, err := k.cp.Kubectl(t.Context(), t, nil, "get", "mcps", "-n", "default")
	require.NoError(t, err)
	t.Logf("kubectl get mcps:\n%s", out)
	return out
}

func TestE2EKubeCustomResourcesDriveRealServers(t *testing.T) {
	k := startKube(t)
	d := k.musterd(t)
	d.waitReady(t)

	// Create: the server runs, and its status subresource says so, with
	// the generation it describes.
	marker := newMarker()
	k.createServer(t, "git", marker)
	k.waitStatus(t, "git", "runs generation 1", runningGen("git", marker, 1))
	first := theServerProc(t, marker)
	assert.Equal(t, d.cmd.Process.Pid, first.ppid, "musterd runs the server itself")

	table := k.kubectlGetMCPS(t)
	assert.Regexp(t, `(?m)^NAME\s+TYPE\s+STATE\s+TOOLS\s+AGE$`, table)
	assert.Regexp(t, `(?m)^git\s+stdio\s+Running\s+1\s+\S+$`, table)
	// The server's lifecycle in muster's words (its Starting may or may
	// not have been seen between two reconciles), and musterd's Synced.
	var created []string
	eventually(t, "the leader records Events on the resource", func() bool {
		created = k.kubeEvents(t, "git")
		return slices.Contains(created, "Normal MCPServerStarted: MCPServer git service started successfully") &&
			slices.Contains(created, "Normal MCPServerToolsDiscovered: MCPServer git tools discovered and registered successfully") &&
			slices.Contains(created, "Normal Synced: generation 1 reconciled")
	})

	// A status-only update reconciles nothing. A spec change of another
	// server, which the same informer delivers after it, is the barrier:
	// once that is reconciled, the status update has been seen.
	starts := d.reconcileStarts(t, "git")
	require.Positive(t, starts)
	s, _ := k.server(t, "git")
	s.Status.RestartCount = 42
	require.NoError(t, k.cp.Client.Status().Update(t.Context(), s))
	barrier := newMarker()
	k.createServer(t, "barrier", barrier)
	k.waitStatus(t, "barrier", "runs", runningGen("barrier", barrier, 1))
	assert.Equal(t, starts, d.reconcileStarts(t, "git"), "a status-only update must not reconcile")
	eventually(t, "the barrier's Events are recorded", func() bool {
		recorded := k.kubeEvents(t, "barrier")
		return slices.Contains(recorded, "Normal MCPServerToolsDiscovered: MCPServer barrier tools discovered and registered successfully") &&
			slices.Contains(recorded, "Normal Synced: generation 1 reconciled")
	})
	assert.Equal(t, created, k.kubeEvents(t, "git"), "nor record an Event")
	assert.True(t, first.alive(), "nor restart the server")
	s, _ = k.server(t, "git")
	assert.Equal(t, int64(1), s.Generation, "a status update is no new generation")

	// Update: a spec change is a new generation, which restarts the server
	// with the new spec and is observed.
	marker2 := newMarker()
	s.Spec.Args = []string{"-tools", marker2}
	require.NoError(t, k.cp.Client.Update(t.Context(), s))
	k.waitStatus(t, "git", "runs generation 2", runningGen("git", marker2, 2))
	theServerProc(t, marker2)
	eventually(t, "the server of generation 1 is gone", func() bool { return !first.alive() })
	eventually(t, "generation 2's Synced Event", func() bool {
		return slices.Contains(k.kubeEvents(t, "git"), "Normal Synced: generation 2 reconciled")
	})
	for _, e := range k.kubeEvents(t, "git") {
		assert.True(t, strings.HasPrefix(e, "Normal "), "no warning on a clean update: %s", e)
	}

	// Delete: the server stops, and musterd forgets the resource.
	require.NoError(t, k.cp.Client.Delete(t.Context(), s))
	eventually(t, "the deleted server's process is gone", func() bool { return len(serverProcs(marker2)) == 0 })
	eventually(t, "musterd forgets the deleted resource", func() bool {
		code, _ := d.get(t, "/api/v1/resources/mcpservers/default/git")
		return code == http.StatusNotFound
	})
	assert.NotContains(t, d.stderr.String(), "status write failed", "a deleted resource's status is no failure")
}

// With musterd's informers watching, the API server stops within
// kubetest.WatchDrainGracePeriod, so the outage begins while every server
// runs.
func TestE2EKubeAPIServerOutageStopsNothingAndStatusCatchesUp(t *testing.T) {
	k := startKube(t)
	d := k.musterd(t)
	d.waitReady(t)
	steady, victim := newMarker(), newMarker()
	k.createServer(t, "steady", steady)
	k.createServer(t, "victim", victim)
	k.waitStatus(t, "steady", "runs", runningGen("steady", steady, 1))
	k.waitStatus(t, "victim", "runs", runningGen("victim", victim, 1))
	steadyProc, victimProc := theServerProc(t, steady), theServerProc(t, victim)

	stopping := time.Now()
	k.cp.StopAPIServer(t)
	t.Logf("the API server took %s to stop", time.Since(stopping))
	// While the API server is down, a server crashes: musterd restarts it
	// and cannot write the status that says so.
	require.NoError(t, proctest.Kill(victimProc.pid))
	restarted := theServerProc(t, victim, victimProc)
	var seen serverObject
	eventually(t, "musterd sees the restarted server Running", func() bool {
		_, body := d.get(t, "/api/v1/resources/mcpservers/default/victim")
		seen = serverObject{}
		return json.Unmarshal([]byte(body), &seen) == nil &&
			seen.Status.RestartCount == 1 && seen.Status.State == v1alpha1.MCPServerStateRunning
	})
	eventually(t, "a status write failed for want of the API server", func() bool {
		return strings.Contains(d.stderr.String(), "category=api_server_unreachable")
	})
	assert.True(t, steadyProc.alive(), "an API outage stops no server")
	assert.True(t, restarted.alive())

	k.cp.StartAPIServer(t)
	k.waitStatus(t, "victim", "shows the restart made during the outage", func(s *v1alpha1.MCPServer) bool {
		return runningGen("victim", victim, 1)(s) && s.Status.RestartCount == 1
	})
	assert.True(t, steadyProc.alive(), "the same process, all along")
	again := theServerProc(t, steady)
	assert.True(t, again.same(steadyProc))
	select {
	case err := <-d.exited:
		t.Fatalf("musterd exited during the outage: %v\n%s", err, d.stderr)
	default:
	}

	// The informers are back too: a change made now is reconciled.
	late := newMarker()
	k.createServer(t, "late", late)
	k.waitStatus(t, "late", "runs", runningGen("late", late, 1))
}

// Kubernetes mode never falls back to the filesystem: an API server that
// cannot be reached, or that refuses musterd, is an error after the
// bounded retry.
func TestE2EKubeUnusableAPIServerIsAnErrorNotAFallback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://%s", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: not-a-secret}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, addr)), 0o600))
	configDir := t.TempDir()
	// A config dir full of definitions: musterd must not run them instead.
	require.NoError(t, os.MkdirAll(filepath.Join(configDir, "mcpservers"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(configDir, "mcpservers", "x.yaml"), []byte(mcpServerYAML("x", stdioSpec("-tools", "x")...)), 0o644))

	began := time.Now()
	out, err := exec.Command(binary, "run", "-listen", "127.0.0.1:0", "-config-dir", configDir,
		"-kubernetes", "-kubeconfig", kubeconfig, "-kube-connect-timeout", "2s").CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	assert.Equal(t, 1, exit.ExitCode())
	assert.GreaterOrEqual(t, time.Since(began), 2*time.Second, "it retried for the whole bound")
	assert.Contains(t, string(out), "is not usable after 2s (api_server_unreachable)")
	assert.Contains(t, string(out), "musterd does not fall back to filesystem mode")
	assert.NotContains(t, string(out), "not-a-secret")
	assert.NotContains(t, string(out), "fs-watcher")
}

func TestE2EKubeAUserWithoutRBACIsRefusedClearly(t *testing.T) {
	k := startKube(t)
	nobody := k.cp.AddUser(t, "nobody")
	out, err := exec.Command(binary, "run", "-listen", "127.0.0.1:0", "-config-dir", t.TempDir(),
		"-kubernetes", "-kubeconfig", k.cp.Kubeconfig(t, nobody), "-kube-connect-timeout", "1s").CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, string(out), "(permission_denied)")
	assert.Contains(t, string(out), `cannot list resource \"mcpservers\"`)
}

// leaderOf returns which of ds runs the servers carrying markers: exactly
// one must run all of them, and the others none.
func leaderOf(ds []*runningDaemon, markers ...string) (*runningDaemon, bool) {
	var leader *runningDaemon
	for _, d := range ds {
		children := 0
		for _, p := range descendants(d.cmd.Process.Pid) {
			if slices.ContainsFunc(markers, func(m string) bool { return slices.Contains(p.args, m) }) {
				children++
			}
		}
		switch {
		case children == len(markers) && leader == nil:
			leader = d
		case children != 0:
			return nil, false
		}
	}
	return leader, leader != nil
}

// leaseHolder returns the identity holding the e2e's leader election
// Lease.
func (k *kubeEnv) leaseHolder(t *testing.T) string {
	t.Helper()
	var lease coordinationv1.Lease
	require.NoError(t, k.cp.Client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "musterd-e2e"}, &lease))
	require.NotNil(t, lease.Spec.HolderIdentity)
	return *lease.Spec.HolderIdentity
}

var metricReconciles = regexp.MustCompile(`(?m)^musterd_reconcile_total\{kind="MCPServer",result="(\w+)"\} (\d+)$`)

func mcpReconciles(t *testing.T, d *runningDaemon) int {
	t.Helper()
	_, body := d.get(t, "/metrics")
	total := 0
	for _, m := range metricReconciles.FindAllStringSubmatch(body, -1) {
		n, _ := strconv.Atoi(m[2])
		total += n
	}
	return total
}

// Three replicas share one Lease. Only the leader runs servers. The leader
// stops cleanly (SIGTERM, releasing the Lease), then the next one crashes
// (SIGKILL, the Lease left to expire): each time another replica takes over
// within the lease duration plus 2 s and reconciles every resource once.
func TestE2EKubeLeaderElectionOnlyTheLeaderReconcilesAndAnotherTakesOver(t *testing.T) {
	const lease = 4 * time.Second
	k := startKube(t)
	args := []string{"-leader-elect", "-leader-election-namespace", "default", "-leader-election-id", "musterd-e2e",
		"-leader-election-lease-duration", lease.String(), "-leader-election-renew-deadline", "3s",
		"-leader-election-retry-period", "500ms"}
	replicas := []*runningDaemon{k.musterd(t, args...), k.musterd(t, args...), k.musterd(t, args...)}
	names := []string{"one", "two"}
	markers := []string{newMarker(), newMarker()}
	for i, name := range names {
		k.createServer(t, name, markers[i])
	}

	// leads waits until exactly one of replicas runs every server and
	// returns it with when that was first seen; then it checks that it
	// reconciled every resource once, that the statuses say Running, and
	// that the others reconciled nothing.
	leads := func(replicas []*runningDaemon) (*runningDaemon, time.Time) {
		var leader *runningDaemon
		eventually(t, "one replica, the leader, runs every server; the others none", func() bool {
			var ok bool
			leader, ok = leaderOf(replicas, markers...)
			return ok
		})
		running := time.Now()
		// Twice each: the pass asks for the start, and the start's outcome
		// is reconciled when it comes: no reconcile waits for a start.
		eventually(t, "the new leader's pass has reconciled every resource", func() bool {
			return mcpReconciles(t, leader) >= 2*len(names)
		})
		// The status says Running; the new leader writes it only where it
		// differs from the old leader's (to the second, as the API server
		// keeps times), so which leader wrote it cannot be told apart.
		for i, name := range names {
			k.waitStatus(t, name, "runs", runningGen(name, markers[i], 1))
		}
		for _, d := range replicas {
			if d == leader {
				assert.Contains(t, d.stderr.String(), `msg="became the leader"`)
				assert.Equal(t, 2*len(names), mcpReconciles(t, d), "the leader reconciled every resource once, and its start's outcome once")
				continue
			}
			assert.Zero(t, mcpReconciles(t, d), "a follower reconciles nothing")
			// A follower refuses a reconcile at once, naming the leader (as
			// it last saw the Lease: polled, since it looks every retry
			// period).
			eventually(t, "a follower refuses a reconcile, naming the leader", func() bool {
				resp, err := http.Post("http://"+d.addr+"/api/v1/resources/mcpservers/default/"+names[0]+"/reconcile", "", nil)
				require.NoError(t, err)
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.NoError(t, err)
				require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
				return strings.Contains(string(body), "the leader is "+k.leaseHolder(t)+":")
			})
			assert.Contains(t, d.stderr.String(), `msg="informers synced"`, "a follower's index is warm")
			code, _ := d.get(t, "/readyz")
			assert.Equal(t, http.StatusOK, code, "a warm follower is ready")
		}
		return leader, running
	}
	without := func(ds []*runningDaemon, d *runningDaemon) []*runningDaemon {
		return slices.DeleteFunc(slices.Clone(ds), func(x *runningDaemon) bool { return x == d })
	}

	leader, _ := leads(replicas)
	k.kubectlGetMCPS(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		replicas = without(replicas, leader)
		old := append(serverProcs(markers[0]), serverProcs(markers[1])...)
		require.NoError(t, leader.cmd.Process.Signal(sig))
		select {
		case <-leader.exited:
		case <-time.After(e2eDeadline):
			t.Fatalf("the leader did not stop on %s\n%s", sig, leader.stderr)
		}
		gone := time.Now()
		eventually(t, "the old leader's servers are gone with it", func() bool {
			return !slices.ContainsFunc(old, proc.alive)
		})
		var running time.Time
		leader, running = leads(replicas)
		took := running.Sub(gone)
		t.Logf("after %s the new leader ran every server %s after the old leader was gone (lease %s)", sig, took.Round(time.Millisecond), lease)
		assert.LessOrEqual(t, took, lease+2*time.Second, "takeover after %s", sig)
	}
	k.kubectlGetMCPS(t)
}
