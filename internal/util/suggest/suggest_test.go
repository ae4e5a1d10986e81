package suggest

import (
	"reflect"
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"values", "valuess", 1}, {"version", "versoin", 2}, {"kitten", "sitting", 3}, {"é", "e", 1}, {"abc", "", 3}} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestClosest(t *testing.T) {
	names := []string{"example.com/team/podinfo", "example.com/team/podinfo-extras", "example.com/team/catalog", "values", "version"}
	if got := Closest("example.com/team/podinf", names, 3); !reflect.DeepEqual(got, []string{"example.com/team/podinfo"}) {
		t.Errorf("Closest = %v", got)
	}
	if got := Closest("valuess", names, 1); !reflect.DeepEqual(got, []string{"values"}) {
		t.Errorf("Closest = %v", got)
	}
	if got := Closest("zzzzzz", names, 3); got != nil {
		t.Errorf("Closest of a stranger = %v", got)
	}
	if got := Closest(strings.Repeat("a", 5000), names, 3); got != nil {
		t.Errorf("an overlong name compared: %v", got)
	}
}
