package startheap

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"
)

func metric(t *testing.T, name string) uint64 {
	t.Helper()
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		t.Fatalf("metric %s: kind %v", name, s[0].Value.Kind())
	}
	return s[0].Value.Uint64()
}

func gcPercent(t *testing.T) uint64 { return metric(t, "/gc/gogc:percent") }
func gcCycles(t *testing.T) uint64  { return metric(t, "/gc/cycles/total:gc-cycles") }

var keep [][]byte

// allocate allocates about n bytes in 64 KiB blocks that stay reachable.
func allocate(n int) {
	for i := 0; i < n>>16; i++ {
		keep = append(keep, make([]byte, 64<<10))
	}
}

func TestStartPercentMakesMinHeapTheFirstGoal(t *testing.T) {
	if startPercent != 400 {
		t.Fatalf("startPercent = %d, want 400 (16 MiB / the runtime's 4 MiB minimum × 100)", startPercent)
	}
}

// Under the raised percentage a heap that grows by 8 MiB (twice the
// runtime's minimum) is not collected; the first collection restores GOGC=100.
func TestNoCollectionBelowMinHeapThenDefaults(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(defaultPercent))
	defer func() { keep = nil }()
	settle(t)

	// The runtime's defaults collect a heap that grows by 8 MiB.
	runtime.GC()
	keep = nil
	runtime.GC()
	before := gcCycles(t)
	allocate(8 << 20)
	if gcCycles(t) == before {
		t.Fatalf("control: GOGC=100 did not collect while the heap grew by 8 MiB")
	}

	keep = nil
	runtime.GC()
	runtime.GC()
	raise()
	if p := gcPercent(t); p != startPercent {
		t.Fatalf("GOGC after raise = %d, want %d", p, startPercent)
	}
	before = gcCycles(t)
	allocate(8 << 20)
	if n := gcCycles(t) - before; n != 0 {
		t.Errorf("%d collections while the heap grew by 8 MiB under the raised GOGC", n)
	}

	collectUntilRestored(t, restores.Load())
	if p := gcPercent(t); p != defaultPercent {
		t.Fatalf("GOGC = %d after the first collection, want %d", p, defaultPercent)
	}
}

// settle waits for the restore armed by init, so that it cannot run in the
// middle of a test's own raise.
func settle(t *testing.T) {
	t.Helper()
	if raised && restores.Load() == 0 {
		collectUntilRestored(t, 0)
	}
}

// collectUntilRestored collects until restore has run once more than n times.
func collectUntilRestored(t *testing.T, n int32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for restores.Load() <= n {
		if time.Now().After(deadline) {
			t.Fatalf("restore did not run after the first collection")
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

// A percentage the program set after init (serve's supervisor sets 20) is
// not overwritten by the restore.
func TestRestoreKeepsAPercentageSetSince(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(defaultPercent))
	settle(t)
	raise()
	n := restores.Load()
	debug.SetGCPercent(20)
	collectUntilRestored(t, n)
	if p := gcPercent(t); p != 20 {
		t.Fatalf("GOGC = %d after the restore, want the program's 20", p)
	}
}

// A GOGC set in the environment is left alone.
func TestEnvironmentGOGCWins(t *testing.T) {
	if os.Getenv("STARTHEAP_REPORT") == "1" {
		// In the child: report what init did, before any collection that
		// would restore the default.
		os.Stdout.WriteString(strconv.FormatBool(raised) + " " + strconv.FormatUint(gcPercent(t), 10) + "\n")
		return
	}
	for _, tc := range []struct {
		gogc       string // "" = unset
		wantRaised bool
		wantPct    string
	}{
		{gogc: "50", wantRaised: false, wantPct: "50"},
		{gogc: "100", wantRaised: false, wantPct: "100"},
		{gogc: "off", wantRaised: false},
		{gogc: "", wantRaised: true},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestEnvironmentGOGCWins$")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GOGC=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "STARTHEAP_REPORT=1")
		if tc.gogc != "" {
			cmd.Env = append(cmd.Env, "GOGC="+tc.gogc)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("GOGC=%q: %v", tc.gogc, err)
		}
		f := strings.Fields(string(out))
		if len(f) < 2 {
			t.Fatalf("GOGC=%q: child printed %q", tc.gogc, out)
		}
		if f[0] != strconv.FormatBool(tc.wantRaised) {
			t.Errorf("GOGC=%q: raised = %s, want %v", tc.gogc, f[0], tc.wantRaised)
		}
		if tc.wantPct != "" && f[1] != tc.wantPct {
			t.Errorf("GOGC=%q: percent = %s, want %s", tc.gogc, f[1], tc.wantPct)
		}
	}
}
