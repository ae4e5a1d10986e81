package expr

import (
	"context"
	"strings"
	"testing"
	"time"
)

// An expression stopped by the cost limit is reported as such even when its
// timeout has passed too by the time the error is looked at (a loaded
// machine): the cost limit is what stopped it.
func TestCostLimitWinsOverAPassedTimeout(t *testing.T) {
	e := &Evaluator{CostLimit: 1, Timeout: time.Nanosecond}
	_, err := e.Template(context.Background(), "values.x", "${[1, 2, 3, 4].map(x, x * 2)}", nil)
	if err == nil || !strings.Contains(err.Error(), "cost limit") {
		t.Fatalf("got %v, want the cost limit named", err)
	}
}
