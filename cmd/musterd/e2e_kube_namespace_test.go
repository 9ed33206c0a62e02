package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// createServerIn declares an mcp-fake stdio server offering the tool marker
// in namespace ns.
func (k *kubeEnv) createServerIn(t *testing.T, ns, name, marker string) {
	t.Helper()
	require.NoError(t, k.cp.Client.Create(t.Context(), &v1alpha1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, AutoStart: true,
			Command: fakeServer(), Args: []string{"-tools", marker}},
	}))
}

func (k *kubeEnv) serverIn(t *testing.T, ns, name string) *v1alpha1.MCPServer {
	t.Helper()
	var s v1alpha1.MCPServer
	require.NoError(t, k.cp.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &s))
	return &s
}

// With -namespace, musterd indexes, reconciles and writes the status of
// the resources of that namespace only: those of another namespace, listed
// at start or created later, are neither indexed nor run nor written to.
func TestE2EKubeNamespaceScopesEverything(t *testing.T) {
	k := startKube(t)
	for _, ns := range []string{"team", "other"} {
		require.NoError(t, k.cp.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	mine, theirs := newMarker(), newMarker()
	k.createServerIn(t, "other", "git", theirs)
	k.createServerIn(t, "team", "git", mine)

	// Ready means the first full reconcile of the initial listing is done.
	d := k.musterd(t, "-namespace", "team")
	d.waitReady(t)
	var running *v1alpha1.MCPServer
	eventually(t, "team/git runs and says so", func() bool {
		running = k.serverIn(t, "team", "git")
		return running.Status != nil && running.Status.State == v1alpha1.MCPServerStateRunning && running.Status.ObservedGeneration == 1
	})
	theServerProc(t, mine)
	code, body := d.get(t, "/api/v1/resources/mcpservers/team/git")
	assert.Equal(t, http.StatusOK, code, body)

	assertIgnored := func(name, marker string) {
		t.Helper()
		code, body := d.get(t, "/api/v1/resources/mcpservers/other/"+name)
		assert.Equal(t, http.StatusNotFound, code, "other/%s is not indexed: %s", name, body)
		assert.Empty(t, serverProcs(marker), "other/%s is not run", name)
		s := k.serverIn(t, "other", name)
		assert.Nil(t, s.Status, "other/%s's status is not written", name)
	}
	assertIgnored("git", theirs)
	assert.Equal(t, 2, mcpReconciles(t, d), "only team/git was reconciled: once, and once for its start's outcome")

	// Created while running: the other namespace's resource first, then one
	// in team, whose reconcile is the barrier (one informer would deliver
	// both, in that order).
	late, barrier := newMarker(), newMarker()
	k.createServerIn(t, "other", "late", late)
	k.createServerIn(t, "team", "barrier", barrier)
	eventually(t, "team/barrier runs", func() bool {
		s := k.serverIn(t, "team", "barrier")
		return s.Status != nil && s.Status.State == v1alpha1.MCPServerStateRunning
	})
	assertIgnored("late", late)
	assert.Equal(t, 4, mcpReconciles(t, d), "team/git and team/barrier (each once, and once for its start's outcome), nothing of other")
}
