package registry

import (
	"context"
	"fmt"
	"testing"

	"oras.land/oras-go/v2/registry/remote/auth"
)

// A shared token cache holds at most maxSharedTokens tokens, however many
// registries and scopes one tenant names; within the bound it caches like
// oras-go's, and a token set anew is kept after the cache started over.
func TestSharedTokensBounded(t *testing.T) {
	ctx := context.Background()
	var s Shared
	c := s.tokenCache("anonymous")
	if c != s.tokenCache("anonymous") {
		t.Fatal("a credential got two token caches")
	}
	set := func(i int) {
		t.Helper()
		tok, err := c.Set(ctx, fmt.Sprintf("r%d.example", i), auth.SchemeBearer, "repository:x:pull", func(context.Context) (string, error) {
			return fmt.Sprint("tok", i), nil
		})
		if err != nil || tok != fmt.Sprint("tok", i) {
			t.Fatalf("set %d: %q, %v", i, tok, err)
		}
	}
	has := func(i int) bool {
		tok, err := c.GetToken(ctx, fmt.Sprintf("r%d.example", i), auth.SchemeBearer, "repository:x:pull")
		return err == nil && tok == fmt.Sprint("tok", i)
	}
	for i := range maxSharedTokens {
		set(i)
	}
	set(0) // again: not a new token
	if !has(0) || !has(maxSharedTokens-1) {
		t.Fatal("within the bound, tokens were not kept")
	}
	for i := maxSharedTokens; i < 3*maxSharedTokens; i++ {
		set(i)
	}
	if !has(3*maxSharedTokens-1) || has(0) {
		t.Fatal("after the bound: the newest token is not kept, or the oldest still is")
	}
	if b, ok := c.(*boundedTokens); !ok || len(b.keys) > maxSharedTokens {
		t.Fatalf("the shared token cache is %T, not bounded to %d", c, maxSharedTokens)
	}
}
