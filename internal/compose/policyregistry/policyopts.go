// Package policyopts turns a sidecar rule (policy.Rule) into the options of
// a registry client: the gate, the plain-HTTP hosts, the rule's credentials
// and the policy's mirrors. It is the one place where the public policy
// meets the internal registry client, so that package policy names no
// registry type in its API.
package policyregistry

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
)

// For configures a registry client for rule r: the gate, the plain-HTTP
// hosts and, with a policy, the rule's credentials only, and the policy's
// mirrors with the credentials they name. lookupEnv reads the credentials'
// env labels (nil: os.LookupEnv).
func For(r *policy.Rule, lookupEnv func(string) (string, bool)) []registry.Option {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	// Every connection made on an Application's behalf keeps off the pod's
	// own and the node's special addresses, unless the operator allowed
	// them; the exact hosts the rule allows are named by the operator too.
	var opts []registry.Option
	if !r.AnyAddress {
		opts = append(opts, registry.WithSpecialAddressesRefused(r.AllowAddresses...))
		for _, rp := range r.Repositories {
			if !strings.ContainsAny(rp.Host, "*?[") {
				opts = append(opts, registry.WithAllowedAddresses(rp.Host))
			}
		}
	}
	if len(r.PlainHTTP) > 0 {
		opts = append(opts, registry.WithPlainHTTP(r.PlainHTTP...))
	}
	if r.AllowsAnyRepository() && r.DefaultCredentials && !r.StrictPlainHTTP {
		return opts
	}
	opts = append(opts, registry.WithGate(r))
	if r.StrictPlainHTTP {
		opts = append(opts, registry.WithStrictPlainHTTP())
	}
	if !r.DefaultCredentials {
		opts = append(opts, registry.WithOnlyScopedCredentials(), registry.WithoutDockerConfig())
	}
	opts = append(opts, mirrorOptions(r, lookupEnv)...)
	for _, c := range r.Credentials {
		opts = append(opts, registry.WithCredentialScopes(registry.CredentialScope{
			Name: c.Name, Host: c.Host, PathPrefix: c.PathPrefix, Get: getter(c, lookupEnv),
		}))
	}
	return opts
}

// mirrorOptions are the policy's mirrors as registry options, each with the
// credential it names read through lookupEnv.
func mirrorOptions(r *policy.Rule, lookupEnv func(string) (string, bool)) []registry.Option {
	var opts []registry.Option
	for _, m := range r.Mirrors {
		var ms []registry.Mirror
		for _, e := range m.Endpoints {
			rm := registry.Mirror{Host: e.Host, PathPrefix: e.PathPrefix, PlainHTTP: e.PlainHTTP, ResolveTags: e.ResolveTags}
			if c, ok := r.MirrorCredentials[e.Credential]; ok && e.Credential != "" {
				rm.CredentialName, rm.Credential = c.Name, getter(c, lookupEnv)
			}
			ms = append(ms, rm)
		}
		opts = append(opts, registry.WithMirrors(m.Upstream, ms...))
	}
	return opts
}

// getter reads the credential's source when a registry asks for it.
func getter(c policy.Credential, lookupEnv func(string) (string, bool)) func(context.Context) (registry.Credential, error) {
	return func(context.Context) (registry.Credential, error) {
		var cred registry.Credential
		var err error
		switch {
		case c.Env != "":
			cred, _, err = registry.EnvCredential(lookupEnv, c.Env)
		case c.DockerConfig != "":
			cred, err = registry.DockerConfigCredential(c.DockerConfig, c.Host)
		default:
			read := func(p string, dst *string) {
				if p != "" && err == nil {
					*dst, err = registry.ReadSecretFile(p)
				}
			}
			read(c.UsernameFile, &cred.Username)
			read(c.PasswordFile, &cred.Password)
			read(c.TokenFile, &cred.AccessToken)
		}
		if err != nil {
			return registry.Credential{}, fmt.Errorf("credential %s of the sidecar policy: %w", c.Name, err)
		}
		return cred, nil
	}
}
