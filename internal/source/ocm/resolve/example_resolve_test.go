package resolve_test

import (
	"context"
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/resolve"
)

type staticRepo []string

func (s staticRepo) ListVersions(context.Context, string) ([]string, error) { return s, nil }

func ExampleVersion() {
	repo := staticRepo{"1.0.0", "2.3.0", "2.3.7", "2.4.0-rc.1", "2.4.0", "3.0.0-beta.1"}
	for _, want := range []string{"2.3.0", "~2.3", "2.3.x", "^2", ">=2.0.0", ">=3.0.0-0", "^3"} {
		v, err := resolve.Version(context.Background(), repo, "example.com/app", want)
		if err != nil {
			fmt.Printf("%-9s error: %v\n", want, err)
			continue
		}
		fmt.Printf("%-9s %s\n", want, v)
	}
	// Output:
	// 2.3.0     2.3.0
	// ~2.3      2.3.7
	// 2.3.x     2.3.7
	// ^2        2.4.0
	// >=2.0.0   2.4.0
	// >=3.0.0-0 3.0.0-beta.1
	// ^3        error: component example.com/app: no version matches "^3": not found (available: 1.0.0, 2.3.0, 2.3.7, 2.4.0-rc.1, 2.4.0, 3.0.0-beta.1)
}
