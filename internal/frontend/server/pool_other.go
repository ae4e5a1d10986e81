//go:build !unix

package server

import (
	"context"
	"errors"
	"io"
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

// Deliver: see the unix Pool.
type Deliver func(exit, stdoutLen, stderrLen int, body io.Reader) error

const deliverTimeout = 30 * time.Second

func (p *Pool) Run(context.Context, []byte, time.Time, Deliver) Outcome {
	return Outcome{Cause: CauseNoWorker, Detail: "not supported on this system"}
}
