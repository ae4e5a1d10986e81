package registry

import (
	"context"
	"sync"

	"oras.land/oras-go/v2/registry/remote/auth"
)

// maxSharedTokens bounds the tokens one shared token cache keeps (oras-go
// keeps one per registry, scheme and scope, for as long as the cache
// lives): a tenant naming registry after registry, or repository after
// repository, must not grow a render worker for the generations after it
// (a token response may be 128 KiB). Past it, the cache starts empty: every
// generation then asks the token services again, once.
const maxSharedTokens = 512

// boundedTokens is an auth.Cache of at most maxSharedTokens tokens.
type boundedTokens struct {
	mu    sync.Mutex
	inner auth.Cache
	keys  map[string]struct{} // registry, scheme and key of every token set in inner
}

func newBoundedTokens() *boundedTokens {
	return &boundedTokens{inner: auth.NewCache(), keys: map[string]struct{}{}}
}

func (b *boundedTokens) cache() auth.Cache {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inner
}

// GetScheme implements auth.Cache.
func (b *boundedTokens) GetScheme(ctx context.Context, registry string) (auth.Scheme, error) {
	return b.cache().GetScheme(ctx, registry)
}

// GetToken implements auth.Cache.
func (b *boundedTokens) GetToken(ctx context.Context, registry string, scheme auth.Scheme, key string) (string, error) {
	return b.cache().GetToken(ctx, registry, scheme, key)
}

// Set implements auth.Cache.
func (b *boundedTokens) Set(ctx context.Context, registry string, scheme auth.Scheme, key string, fetch func(context.Context) (string, error)) (string, error) {
	k := registry + "\x00" + scheme.String() + "\x00" + key
	b.mu.Lock()
	if _, ok := b.keys[k]; !ok {
		if len(b.keys) >= maxSharedTokens {
			b.inner, b.keys = auth.NewCache(), map[string]struct{}{}
		}
		b.keys[k] = struct{}{}
	}
	inner := b.inner
	b.mu.Unlock()
	return inner.Set(ctx, registry, scheme, key, fetch)
}
