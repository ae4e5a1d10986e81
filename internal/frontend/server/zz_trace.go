package server

import (
	"fmt"
	"os"
	"sync"
	"time"
)

var traceMu sync.Mutex
var traceF *os.File

func Trace(tag string) {
	if os.Getenv("ZZ_TRACE") == "" {
		return
	}
	traceMu.Lock()
	defer traceMu.Unlock()
	if traceF == nil {
		traceF, _ = os.OpenFile(os.Getenv("ZZ_TRACE"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	}
	fmt.Fprintf(traceF, "%d %d %s\n", time.Now().UnixMicro(), os.Getpid(), tag)
}
