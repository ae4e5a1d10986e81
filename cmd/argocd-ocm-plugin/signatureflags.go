package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
)

// signatureFlags are the trust flags of verify and render: --signature
// names, each verified with a key (--public-key, --root-ca) or keyless with
// cosign's flags (--trusted-root, --certificate-identity[-regexp],
// --certificate-oidc-issuer[-regexp], --insecure-ignore-tlog). Each flag is
// given once for every name or once per name.
type signatureFlags struct {
	names, keys, roots                                                []string
	trustedRoots, identities, identityRegexps, issuers, issuerRegexps []string
	ignoreTlog                                                        bool
}

func (s *signatureFlags) register(f *pflag.FlagSet, nameUsage string) {
	f.StringArrayVar(&s.names, "signature", nil, nameUsage)
	f.StringArrayVar(&s.keys, "public-key", nil, publicKeyUsage)
	f.StringArrayVar(&s.roots, "root-ca", nil, rootCAUsage)
	f.StringArrayVar(&s.trustedRoots, "trusted-root", nil, "Sigstore trusted_root.json for keyless (Sigstore/v1alpha1) signatures, as cosign's --trusted-root; nothing is fetched (one, or one per --signature)")
	f.StringArrayVar(&s.identities, "certificate-identity", nil, "keyless: the signing certificate's exact identity (e-mail or URI) (one, or one per --signature)")
	f.StringArrayVar(&s.identityRegexps, "certificate-identity-regexp", nil, "keyless: a regular expression the whole identity must match (one, or one per --signature)")
	f.StringArrayVar(&s.issuers, "certificate-oidc-issuer", nil, "keyless: the exact OIDC issuer of the signing certificate (one, or one per --signature)")
	f.StringArrayVar(&s.issuerRegexps, "certificate-oidc-issuer-regexp", nil, "keyless: a regular expression the whole OIDC issuer must match (one, or one per --signature)")
	f.BoolVar(&s.ignoreTlog, "insecure-ignore-tlog", false, "keyless: accept signatures without a transparency log entry, with an RFC 3161 timestamp of the trusted root's timestamp authority instead (OCM's privateInfrastructure)")
}

// signatures are the signatures the flags require: the lists as given, or,
// with any keyless flag, every name with all that verifies it.
func (s *signatureFlags) signatures() (argocdocm.Signatures, error) {
	plain := argocdocm.Signatures{Names: s.names, PublicKeys: s.keys, RootCAs: s.roots}
	type list struct {
		flag   string
		values []string
	}
	perName := func(lists ...list) error {
		for _, l := range lists {
			if len(l.values) > 1 && len(l.values) != len(s.names) {
				return fmt.Errorf("%w: %d signature names but %d %s: give one, or one per name", errdef.ErrInvalidInput, len(s.names), len(l.values), l.flag)
			}
		}
		return nil
	}
	keylessLists := []list{{"--trusted-root", s.trustedRoots}, {"--certificate-identity", s.identities},
		{"--certificate-identity-regexp", s.identityRegexps}, {"--certificate-oidc-issuer", s.issuers}, {"--certificate-oidc-issuer-regexp", s.issuerRegexps}}
	if err := perName(keylessLists...); err != nil {
		return plain, err
	}
	keyless := s.ignoreTlog
	for _, l := range keylessLists {
		keyless = keyless || len(l.values) > 0
	}
	if !keyless {
		return plain, nil
	}
	if len(s.names) == 0 {
		return plain, fmt.Errorf("%w: --trusted-root and the certificate flags need a --signature name", errdef.ErrInvalidInput)
	}
	if err := perName(list{"--public-key", s.keys}, list{"--root-ca", s.roots}); err != nil {
		return plain, err
	}
	out := argocdocm.Signatures{Trust: make([]policy.Signature, len(s.names))}
	for i, n := range s.names {
		pick := func(values []string) string {
			switch {
			case len(values) == 1:
				return values[0]
			case i < len(values):
				return values[i]
			}
			return ""
		}
		out.Trust[i] = policy.Signature{Name: n, PublicKey: pick(s.keys), RootCA: pick(s.roots), TrustedRoot: pick(s.trustedRoots),
			CertificateIdentity: pick(s.identities), CertificateIdentityRegexp: pick(s.identityRegexps),
			CertificateOIDCIssuer: pick(s.issuers), CertificateOIDCIssuerRegexp: pick(s.issuerRegexps)}
		out.Trust[i].PrivateInfrastructure = s.ignoreTlog && out.Trust[i].TrustedRoot != ""
		if out.Trust[i].PublicKey == "" && out.Trust[i].RootCA == "" && out.Trust[i].TrustedRoot == "" {
			return plain, fmt.Errorf("%w: signature verification needs both a signature name and a public key, root CA or trusted root", errdef.ErrInvalidInput)
		}
	}
	return out, nil
}

// empty: the flags name no signature and no trust.
func (s *signatureFlags) empty() bool {
	return len(s.names)+len(s.keys)+len(s.roots)+len(s.trustedRoots)+len(s.identities)+len(s.identityRegexps)+len(s.issuers)+len(s.issuerRegexps) == 0 && !s.ignoreTlog
}
