//go:build !unix

package server

import (
	"context"
	"errors"
	"os/exec"
	"time"
)

// Pool needs unix sockets and signals; elsewhere it does not start.
type Pool struct {
	Command                            func() *exec.Cmd
	Size, Warm, RecycleAfter           int
	Deadline, Grace, IdleTimeout, Poll time.Duration
	MaxMemory, TotalMemory             int64
	Metrics                            *Metrics
}

func (p *Pool) Start() error { return errors.ErrUnsupported }
func (p *Pool) Close()       {}
func (p *Pool) Stats() Stats { return Stats{} }
func (p *Pool) Pids() []int  { return nil }
func (p *Pool) Do(context.Context, *Request, time.Time) (*Result, Outcome) {
	return nil, Outcome{Cause: CauseNoWorker, Detail: "not supported on this system"}
}
