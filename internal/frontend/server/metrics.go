package server

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Metrics counts what the render server does, for Prometheus (WriteText). A
// nil *Metrics counts nothing.
type Metrics struct {
	mu           sync.Mutex
	generations  map[string]int64 // by outcome
	workerStarts int64
	workerKills  map[string]int64 // by cause
	redeliveries int64
	refusals     map[string]int64 // by reason
	queueSum     float64
	genSum       float64
	genCount     int64
	// Stats, when set, reports the pool's state (gauges).
	Stats func() Stats
}

// NewMetrics returns empty counters.
func NewMetrics() *Metrics {
	return &Metrics{generations: map[string]int64{}, workerKills: map[string]int64{}, refusals: map[string]int64{}}
}

// Generation counts one request: outcome is "ok", "failed" (the command's
// own error) or a Cause.
func (m *Metrics) Generation(outcome string, queue, total time.Duration) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.generations[outcome]++
	m.queueSum += queue.Seconds()
	m.genSum += total.Seconds()
	m.genCount++
}

func (m *Metrics) workerStarted() {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.workerStarts++
	m.mu.Unlock()
}

func (m *Metrics) workerKilled(cause string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.workerKills[cause]++
	m.mu.Unlock()
}

// redelivered counts a generation given to another worker because the one
// it was handed had died before it took it.
func (m *Metrics) redelivered() {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.redeliveries++
	m.mu.Unlock()
}

// refused counts a request the server did not run (the client rendered
// in a process of its own): reason is "environment", "protocol" or
// "draining".
func (m *Metrics) refused(reason string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.refusals[reason]++
	m.mu.Unlock()
}

// WriteText writes the counters in the Prometheus text exposition format.
func (m *Metrics) WriteText(w io.Writer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	p("# HELP argocd_ocm_generations_total Generations the render server answered, by outcome (ok, failed: the command's own error, or the limit that stopped it).\n")
	p("# TYPE argocd_ocm_generations_total counter\n")
	for _, k := range sortedKeys(m.generations) {
		p("argocd_ocm_generations_total{outcome=%s} %d\n", strconv.Quote(k), m.generations[k])
	}
	p("# HELP argocd_ocm_generation_seconds Time from a request's arrival to its result, queue included.\n")
	p("# TYPE argocd_ocm_generation_seconds summary\n")
	p("argocd_ocm_generation_seconds_sum %g\nargocd_ocm_generation_seconds_count %d\n", m.genSum, m.genCount)
	p("# HELP argocd_ocm_queue_seconds Time requests waited for a free render worker.\n")
	p("# TYPE argocd_ocm_queue_seconds summary\n")
	p("argocd_ocm_queue_seconds_sum %g\nargocd_ocm_queue_seconds_count %d\n", m.queueSum, m.genCount)
	p("# HELP argocd_ocm_worker_starts_total Render worker processes started.\n")
	p("# TYPE argocd_ocm_worker_starts_total counter\n")
	p("argocd_ocm_worker_starts_total %d\n", m.workerStarts)
	p("# HELP argocd_ocm_worker_kills_total Render workers killed, by cause (deadline, memory, total-memory, canceled, recycled).\n")
	p("# TYPE argocd_ocm_worker_kills_total counter\n")
	for _, k := range sortedKeys(m.workerKills) {
		p("argocd_ocm_worker_kills_total{cause=%s} %d\n", strconv.Quote(k), m.workerKills[k])
	}
	p("# HELP argocd_ocm_generation_redeliveries_total Generations given to another render worker because the one they were handed had died before it took them (killed from outside while idle).\n")
	p("# TYPE argocd_ocm_generation_redeliveries_total counter\n")
	p("argocd_ocm_generation_redeliveries_total %d\n", m.redeliveries)
	p("# HELP argocd_ocm_requests_refused_total Requests the render server did not run, by reason (environment: the client's settings differ from the server's; protocol; draining): each was rendered by a process of its own.\n")
	p("# TYPE argocd_ocm_requests_refused_total counter\n")
	for _, k := range []string{"environment", "protocol", "draining"} {
		p("argocd_ocm_requests_refused_total{reason=%s} %d\n", strconv.Quote(k), m.refusals[k])
	}
	if m.Stats != nil {
		s := m.Stats()
		p("# HELP argocd_ocm_workers Render worker processes, and how many are rendering.\n")
		p("# TYPE argocd_ocm_workers gauge\n")
		p("argocd_ocm_workers{state=\"all\"} %d\nargocd_ocm_workers{state=\"busy\"} %d\n", s.Workers, s.Busy)
		p("# HELP argocd_ocm_waiting_requests Requests waiting for a free render worker.\n")
		p("# TYPE argocd_ocm_waiting_requests gauge\n")
		p("argocd_ocm_waiting_requests %d\n", s.Waiting)
		p("# HELP argocd_ocm_worker_private_bytes Private resident memory of all render workers at the last poll.\n")
		p("# TYPE argocd_ocm_worker_private_bytes gauge\n")
		p("argocd_ocm_worker_private_bytes %d\n", s.PrivateBytes)
	}
	return err
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
