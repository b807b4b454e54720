//go:build !linux

package h1

import (
	"errors"
	"runtime"
	"time"
)

// Loop is Linux's (epoll); elsewhere NewLoop says so, and the engine's
// clients are goroutines.
type Loop struct{}

var errNoLoop = errors.New("h1: no event loop on this system")

func NewLoop() (*Loop, error)            { return nil, errNoLoop }
func (l *Loop) Go(client func())         {}
func (l *Loop) Run()                     {}
func (l *Loop) Interrupt()               {}
func (l *Loop) Sleep(time.Duration) bool { return false }

func (l *Loop) dial(string, time.Duration) (*loopSocket, error) { return nil, errNoLoop }

type loopSocket struct{}

func (*loopSocket) Read([]byte) (int, error)    { return 0, errNoLoop }
func (*loopSocket) Write([]byte) (int, error)   { return 0, errNoLoop }
func (*loopSocket) SetDeadline(time.Time) error { return errNoLoop }
func (*loopSocket) Close() error                { return nil }

// Procs is GOMAXPROCS (no loops run here).
func Procs() int { return runtime.GOMAXPROCS(0) }
