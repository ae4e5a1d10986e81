package server

// A generate process of its own (the client's fallback, without a render
// server) holds the same hard memory bound as a worker: the client starts
// it as its child with EnvGuarded set and reads its stderr; the process
// hands the client its one error line for the limit on fd GuardFD, then
// limits its own address space (LimitOwnMemory). An allocation past the
// limit ends it with the Go runtime's report, which the client replaces by
// that line (OutOfMemory tells the report), so that the one-line contract
// holds and nothing reaches stdout.
const (
	// EnvGuarded, set by the client, says that it reads the process's
	// stderr and that GuardFD is open (its value is GuardFD's number).
	EnvGuarded = "ARGOCD_OCM_GUARDED_PROCESS"
	// GuardFD is where the process writes its limit line (the first of
	// exec.Cmd.ExtraFiles).
	GuardFD = 3
)
