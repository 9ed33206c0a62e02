package statusync

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/musterd/musterd/pkg/bus"
)

// busCollector exports bus.Stats, read at scrape time: the counters live in
// the bus, so they are exact even when a subscriber drops events.
type busCollector struct {
	bus                                              *bus.Bus
	published, delivered, coalesced, dropped, panics *prometheus.Desc
	pending, rejected                                *prometheus.Desc
}

func newBusCollector(b *bus.Bus) *busCollector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(metricsNamespace, "bus", name), help, labels, nil)
	}
	return &busCollector{
		bus:       b,
		published: desc("published_total", "Total number of events published per event type.", "event"),
		delivered: desc("delivered_total", "Total number of events handled per subscriber and event type.", "subscriber", "event"),
		coalesced: desc("coalesced_total",
			"Total number of events a coalescing subscriber replaced or merged into a pending event of their key.",
			"subscriber", "event"),
		dropped: desc("dropped_total", "Total number of events a lossy subscriber dropped because its mailbox was full.",
			"subscriber", "event"),
		panics:   desc("panics_total", "Total number of handler panics per subscriber and event type.", "subscriber", "event"),
		pending:  desc("pending", "Number of events waiting in a subscriber's mailbox.", "subscriber"),
		rejected: desc("rejected_total", "Total number of nil events published."),
	}
}

func (c *busCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.published, c.delivered, c.coalesced, c.dropped, c.panics, c.pending, c.rejected} {
		ch <- d
	}
}

func (c *busCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.bus.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for event, n := range st.Published {
		counter(c.published, n, event)
	}
	counter(c.rejected, st.Rejected)

	// Stats has one entry per subscription and handler type; two Go types
	// may share an EventType name, and a label set must be exported once.
	type handlerKey struct{ subscriber, event string }
	handlers := map[handlerKey]*bus.HandlerStats{}
	pending := map[string]int{}
	for _, h := range st.Handlers {
		k := handlerKey{h.Subscriber, h.EventType}
		if sum, ok := handlers[k]; ok {
			sum.Delivered += h.Delivered
			sum.Coalesced += h.Coalesced
			sum.Dropped += h.Dropped
			sum.Panicked += h.Panicked
		} else {
			handlers[k] = &h
		}
		pending[h.Subscriber] = h.Pending // the whole mailbox: the same for each handler
	}
	for k, h := range handlers {
		counter(c.delivered, h.Delivered, k.subscriber, k.event)
		counter(c.coalesced, h.Coalesced, k.subscriber, k.event)
		counter(c.dropped, h.Dropped, k.subscriber, k.event)
		counter(c.panics, h.Panicked, k.subscriber, k.event)
	}
	for subscriber, n := range pending {
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(n), subscriber)
	}
}
