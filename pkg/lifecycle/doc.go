// Package lifecycle is the component registry that wires and runs musterd's
// pipeline: watchers, debouncer, coordinator, status and metrics subscribers
// are each a [Component], registered with their dependencies and run by
// [Registry.Run].
//
// Place in the pipeline: it sits above every stage and imports only bus and
// redact. Stages never import it; they satisfy [Component] and the optional
// [HealthChecker], [SubscriptionReadySignaler] and [BusyReporter] by Go's
// structural typing.
//
// Guarantees:
//
//   - Nothing starts on a bad graph: an unknown dependency, a dependency
//     cycle (reported as "lifecycle: cycle: a → b → a") or a component that
//     depends on a leader-only one without being leader-only itself is an
//     error from Run before any Start is called.
//   - Dependency order: a component starts only once each of its
//     dependencies has started and, if the dependency signals
//     SubscriptionReady, once it has subscribed. Independent components
//     start concurrently.
//   - Nothing is lost at start up: the bus holds events until every
//     component that starts now has subscribed; only then is its barrier
//     released ([bus.Bus.Start]).
//   - Bounded start up: a component that has not subscribed within
//     Options.StartTimeout of its Start fails with an error matching
//     [ErrStartTimeout] ("lifecycle: "x" did not become ready within
//     1m0s") and is cancelled. If it is [Critical], Run returns that error;
//     otherwise the barrier is released without it and its dependents do
//     not start. A stuck start therefore never holds the barrier, nor counts
//     as healthy, for longer than StartTimeout.
//   - Ordered, bounded shutdown: components stop in reverse start order, each
//     cancelled only after the one started after it has returned, all within
//     Options.StopTimeout. A component that does not return in time is named
//     in Run's error and abandoned.
//   - Failure isolation: a panic in Start is recovered and is a failure of
//     that component. A [Critical] component that fails, or returns while
//     the registry is not stopping, stops the whole registry and Run returns
//     an error naming it. Any other component's failure is logged and shown
//     in [Registry.Health] while the rest keep running.
//   - Health: HealthCheck errors and stalls (a [BusyReporter] busy on one
//     event for longer than Options.StallLimit) make a component unhealthy;
//     health is evaluated every Options.HealthInterval and on each call of
//     Health, and every change is logged.
//   - No secrets in logs: every error text logged (component errors, panic
//     values, health-check errors) and the text of Run's error pass through
//     redact.String; errors.Is and errors.As still see the original errors.
//     [ComponentHealth].Err is the component's own error, for the caller to
//     redact where it shows it.
//   - Leadership: [LeaderOnly] components start when Options.Elected is
//     closed. Losing leadership is not handled here: like controller-runtime,
//     the process is expected to exit, and a fresh process starts as a
//     follower.
package lifecycle
