package argocdocm

import "github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"

// Signatures name the signatures that must verify, each with its public
// key file and its root CA file: one file per name, or one for every name,
// "" in a per-name list for none (the --signature, --public-key and
// --root-ca flags; a rule's policy.Rule.SignatureFlags). Every name needs a
// key or a root CA; with both, a PEM signature that carries a certificate is
// checked against the root CA and every other signature with the key
// (signing.Trust).
//
// Trust, when set, names every signature with all that verifies it, as a
// sidecar policy does (policy.Signature): a public key and/or root CA, or a
// Sigstore trusted root with the identity that must have signed (keyless);
// the lists are then not used.
type Signatures struct {
	Names, PublicKeys, RootCAs []string
	Trust                      []policy.Signature
}

// ruleSignatures are the signatures rule requires.
func ruleSignatures(rule *policy.Rule) Signatures {
	if rule.Source != "environment" && len(rule.Signatures) > 0 {
		return Signatures{Trust: rule.Signatures}
	}
	names, keys, roots := rule.SignatureFlags()
	return Signatures{Names: names, PublicKeys: keys, RootCAs: roots}
}
