// Package election is musterd's leader election in Kubernetes mode: one
// replica at a time holds a coordination.k8s.io Lease and runs the
// leader-only stages (the coordinator, and so the reconcilers that start
// servers, and status writes).
//
// Place in the pipeline: a foundation, beside the bus, that gates the
// leader-only components through [Elector.Elected] (lifecycle's
// Options.Elected). It imports events and bus, publishing BecameLeader and
// LostLeadership.
//
//	kube-watcher ──Synced──▶ Elector ──Lease (client-go leaderelection)──▶ API server
//	                            ├──Elected──▶ lifecycle: coordinator starts, OnElected (a full pass)
//	                            └──BecameLeader / LostLeadership──▶ bus
//
// It is client-go's LeaderElector over a LeaseLock, which is what
// controller-runtime's manager runs, with the manager's defaults
// (DefaultLeaseDuration, DefaultRenewDeadline, DefaultRetryPeriod), its
// identity scheme (hostname_uuid) and its client timeout heuristic. The
// manager itself is not used: musterd's lifecycle registry already runs
// the components and knows which are leader-only.
//
// Guarantees:
//
//   - A replica campaigns only once Options.Ready is closed (the watcher's
//     initial listing is in the index), so a new leader starts warm and its
//     first pass sees every resource.
//   - On election: Elected is closed, then OnElected runs, then BecameLeader
//     is published.
//   - Losing the lease (a renewal that fails for RenewDeadline, such as
//     during an API server outage longer than that) publishes
//     LostLeadership, calls OnLost and makes Start return ErrLostLeadership.
//     Like controller-runtime, the replica is then expected to exit (and
//     be restarted by the kubelet as a follower): a leader-only stage is
//     never restarted in the same process.
//   - A clean stop releases the Lease (ReleaseOnCancel), so the next leader
//     takes over at once rather than after LeaseDuration. Registered as a
//     foundation, the elector stops after every stage and after the
//     supervisor's stopper: this replica's servers are gone before another
//     replica may start its own.
package election
