package signing

import (
	"bytes"
	"crypto"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// OpenPGPKeys are OpenPGP public keys (an armored key block, as `gpg
// --armor --export` writes it) for GPG signatures.
type OpenPGPKeys struct {
	entities openpgp.EntityList
}

const (
	pgpPublicKeyBlock  = "PGP PUBLIC KEY BLOCK"
	pgpPrivateKeyBlock = "PGP PRIVATE KEY BLOCK"
	pgpSignatureBlock  = "PGP SIGNATURE"
)

func isArmoredOpenPGP(b []byte) bool {
	i := bytes.Index(b, []byte("-----BEGIN "))
	return i >= 0 && bytes.HasPrefix(b[i:], []byte("-----BEGIN PGP "))
}

// ParseOpenPGPKeys parses an ASCII-armored OpenPGP public key block.
func ParseOpenPGPKeys(armored []byte) (*OpenPGPKeys, error) {
	block, err := armor.Decode(bytes.NewReader(armored))
	if err != nil {
		return nil, fmt.Errorf("%w: OpenPGP key: not an armored OpenPGP block", errdef.ErrInvalidInput)
	}
	if block.Type != pgpPublicKeyBlock {
		if block.Type == pgpPrivateKeyBlock {
			return nil, fmt.Errorf("%w: OpenPGP key: this is a private key block; give the public key (gpg --armor --export)", errdef.ErrInvalidInput)
		}
		return nil, fmt.Errorf("%w: OpenPGP key: armored block %s is not a %s", errdef.ErrInvalidInput, errdef.Quote(block.Type), pgpPublicKeyBlock)
	}
	list, err := openpgp.ReadKeyRing(block.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: OpenPGP key: %v", errdef.ErrInvalidInput, err)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%w: OpenPGP key: the key block holds no key", errdef.ErrInvalidInput)
	}
	return &OpenPGPKeys{entities: list}, nil
}

// Fingerprints are the hex fingerprints of the primary keys.
func (k *OpenPGPKeys) Fingerprints() []string {
	var out []string
	for _, e := range k.entities {
		out = append(out, strings.ToUpper(fmt.Sprintf("%x", e.PrimaryKey.Fingerprint)))
	}
	return out
}

// verifyGPG checks an armored detached OpenPGP signature over data (the raw
// digest bytes, as the OCM CLI signs them) and returns the signer.
func verifyGPG(keys *OpenPGPKeys, data []byte, armored string, now time.Time) (string, error) {
	block, err := armor.Decode(strings.NewReader(armored))
	if err != nil || block.Type != pgpSignatureBlock {
		return "", fmt.Errorf("%s value is not an armored %s block", MediaTypeGPG, pgpSignatureBlock)
	}
	sig, signer, err := openpgp.VerifyDetachedSignature(keys.entities, bytes.NewReader(data), block.Body, &packet.Config{Time: func() time.Time { return now }})
	if err != nil {
		if errors.Is(err, pgperrors.ErrUnknownIssuer) {
			return "", fmt.Errorf("GPG signature was not made by the configured OpenPGP key (%s)", strings.Join(keys.Fingerprints(), ", "))
		}
		return "", fmt.Errorf("GPG signature does not verify with the configured OpenPGP key: %s", oneLine(err.Error()))
	}
	// The OCM CLI signs the digest as binary data; a text signature would
	// have been made over a line-ending-normalised variant of it.
	if sig.SigType != packet.SigTypeBinary {
		return "", fmt.Errorf("GPG signature is of type %#x, want a binary signature (0x00)", uint8(sig.SigType))
	}
	switch sig.Hash {
	case crypto.SHA256, crypto.SHA384, crypto.SHA512, crypto.SHA3_256, crypto.SHA3_512:
	default:
		return "", fmt.Errorf("GPG signature uses hash %v; only SHA-256 or stronger is accepted", sig.Hash)
	}
	who := strings.ToUpper(fmt.Sprintf("%x", signer.PrimaryKey.Fingerprint))
	if id := signer.PrimaryIdentity(); id != nil {
		who += " " + id.Name
	}
	return "OpenPGP key " + who, nil
}
