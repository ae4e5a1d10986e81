package main

import "time"

// stopPolicy says how serve ends its command (argocd-cmp-server) once the
// pod is asked to stop. argocd-cmp-server's first SIGTERM only removes its
// socket, so that the repo-server sends it nothing new, and it ends on a
// second one; generations it already runs go on through the render server.
// serve forwards the first signal at once and sends SIGTERM again, every
// half second, as soon as no generation runs (at most Grace later); a
// command still alive Kill after that is killed.
type stopPolicy struct {
	// Running reports the generations the render server runs. Nil: none.
	Running func() int
	// Grace bounds the wait for running generations. Default 10 s (the
	// render server's own drain), within Kubernetes' default 30 s
	// termination grace period.
	Grace time.Duration
	// Kill is how long the command has to end after the wait. Default 5 s.
	Kill time.Duration
}

// resendEvery spaces the repeated SIGTERMs: the first is the one that
// makes argocd-cmp-server remove its socket.
const resendEvery = 500 * time.Millisecond

func (p stopPolicy) withDefaults() stopPolicy {
	if p.Running == nil {
		p.Running = func() int { return 0 }
	}
	if p.Grace <= 0 {
		p.Grace = 10 * time.Second
	}
	if p.Kill <= 0 {
		p.Kill = 5 * time.Second
	}
	return p
}

type stopStep int

const (
	stepWait stopStep = iota
	stepTerm          // send SIGTERM again
	stepKill          // SIGKILL
)

// stopState tracks one stop: when it began and when the command last got
// a SIGTERM.
type stopState struct {
	began, lastTerm time.Time
}

// begin records the first stop signal (already forwarded); it reports
// false for later ones.
func (s *stopState) begin(now time.Time) bool {
	if !s.began.IsZero() {
		return false
	}
	s.began, s.lastTerm = now, now
	return true
}

// next says what to do at now.
func (s *stopState) next(now time.Time, p stopPolicy) stopStep {
	since := now.Sub(s.began)
	switch {
	case since >= p.Grace+p.Kill:
		return stepKill
	case now.Sub(s.lastTerm) < resendEvery:
		return stepWait
	case since >= p.Grace || p.Running() == 0:
		s.lastTerm = now
		return stepTerm
	}
	return stepWait
}
