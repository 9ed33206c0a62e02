package controls

import (
	"time"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/services"
)

// Overview is the daemon at a glance: what muster's GetOverview held.
type Overview struct {
	// Mode is "filesystem" or "kubernetes".
	Mode string `json:"mode"`
	// Role is "leader" or "follower".
	Role string `json:"role"`
	// Leader is the leader's identity on a follower, when known.
	Leader string `json:"leader,omitempty"`
	// Kinds are the kinds and whether each is reconciled.
	Kinds []KindOverview `json:"kinds"`
	// EnabledKinds are the kinds reconciled.
	EnabledKinds []string `json:"enabledKinds"`
	// QueueDepth is how many keys wait for a reconcile.
	QueueDepth int `json:"queueDepth"`
	// Resources counts the declared resources by reconcile state (Pending,
	// Reconciling, Synced, Error, Failed).
	Resources map[string]int `json:"resources"`
	// Servers counts the MCP servers by state (Running, Stopped, …);
	// "Unknown" for those not reconciled yet.
	Servers map[string]int `json:"servers"`
	// StoppedByOperator names the servers an operator stopped.
	StoppedByOperator []string `json:"stoppedByOperator,omitempty"`
	// LastFullResync is when the last resync was asked for through
	// controls; absent if none was.
	LastFullResync *time.Time `json:"lastFullResync,omitempty"`
	// Tools is how many tools the catalogue exposes.
	Tools int `json:"tools"`
	// ServerTools are, per running server (by name, namespace/name
	// outside the default namespace), how many tools it offers and how
	// many of them are exposed.
	ServerTools map[string]ToolCounts `json:"serverTools,omitempty"`
}

// ToolCounts are one running server's tools: how many it offers, how many
// of them musterd exposes (what its exposure policy keeps, less the names
// held back by a conflict).
type ToolCounts struct {
	Offered int `json:"offered"`
	Exposed int `json:"exposed"`
}

// KindOverview is one kind in an Overview.
type KindOverview struct {
	Kind      string `json:"kind"`
	Enabled   bool   `json:"enabled"`
	Resources int    `json:"resources"`
	// Note is "reconciliation disabled" for a disabled kind.
	Note string `json:"note,omitempty"`
}

// NoteDisabled is what status says of a disabled kind's resources.
const NoteDisabled = "reconciliation disabled"

// Overview returns the overview now.
func (c *Controller) Overview() Overview {
	o := Overview{Mode: c.opts.Mode, Role: "leader", Kinds: []KindOverview{}, EnabledKinds: []string{},
		Resources: map[string]int{}, Servers: map[string]int{}}
	if c.opts.Leader != nil {
		if leader, leading := c.opts.Leader(); !leading {
			o.Role, o.Leader = "follower", leader
		}
	}
	for _, kind := range c.opts.Kinds {
		ko := KindOverview{Kind: kind, Enabled: c.opts.Coordinator.KindEnabled(kind), Resources: len(c.opts.Index.Keys(kind))}
		if ko.Enabled {
			o.EnabledKinds = append(o.EnabledKinds, kind)
		} else {
			ko.Note = NoteDisabled
		}
		o.Kinds = append(o.Kinds, ko)
	}
	if c.opts.QueueDepth != nil {
		o.QueueDepth = c.opts.QueueDepth()
	}
	for _, e := range c.opts.Index.List("") {
		state := "Pending"
		if st, ok := c.opts.Statuses.Get(e.Key); ok {
			state = string(st.State)
		}
		o.Resources[state]++
		if e.Key.Kind != v1alpha1.KindMCPServer {
			continue
		}
		server := "Unknown"
		if st, ok := c.opts.ServerStatus(e.Key); ok && st.State != "" {
			server = string(st.State)
		}
		o.Servers[server]++
		if c.opts.ServerTools != nil {
			if counts, running := c.opts.ServerTools(e.Key); running {
				if o.ServerTools == nil {
					o.ServerTools = map[string]ToolCounts{}
				}
				o.ServerTools[refOf(e.Key)] = counts
			}
		}
	}
	for _, r := range c.opts.Overrides.List() {
		if r.State == services.StateStopped && c.opts.Index.Hash(r.Key) == r.Hash {
			o.StoppedByOperator = append(o.StoppedByOperator, refOf(r.Key))
		}
	}
	c.mu.Lock()
	if !c.lastResync.IsZero() {
		t := c.lastResync
		o.LastFullResync = &t
	}
	c.mu.Unlock()
	if c.opts.ToolCount != nil {
		o.Tools = c.opts.ToolCount()
	}
	return o
}

func refOf(k events.Key) string {
	if k.Namespace == events.DefaultNamespace {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}
