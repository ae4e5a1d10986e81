package deployment

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/testutil"
)

// billionLaughs is a definition whose nine anchors each repeat the previous
// one ten times: a billion strings when expanded.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("apiVersion: deploy.ocm.software/v1alpha1\nkind: DeploymentDefinition\nx0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 9; i++ {
		p := fmt.Sprintf("*a%d", i-1)
		fmt.Fprintf(&b, "x%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(p+", ", 10), ", "))
	}
	return b.String()
}

// An alias bomb is refused before anything is expanded: in a few
// milliseconds of CPU, with ErrLimitExceeded; reasonable reuse of anchors still reads.
func TestAliasBombRefusedEarly(t *testing.T) {
	var err error
	took := testutil.CPUTime(func() { _, err = Decode("definition.yaml", []byte(billionLaughs())) })
	if !errors.Is(err, errdef.ErrLimitExceeded) || !strings.Contains(err.Error(), "aliases expand to more than") {
		t.Fatalf("err = %v", err)
	}
	t.Logf("refused after %v of CPU: %v", took, err)
	if took > time.Second {
		t.Errorf("refused after %v of CPU", took)
	}

	reuse := "a: &common {x: 1, l: [1, 2, 3]}\nb: *common\nc: {<<: *common, z: 2}\n"
	v, err := yamlfile.ParseStrict("values", []byte(reuse))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if c := m["c"].(map[string]any); c["z"] == nil || c["x"] == nil || m["b"] == nil {
		t.Errorf("anchors not expanded: %v", m)
	}
}
