package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// Credential is what authenticates the plugin to one registry. It is oras-go's
// auth.Credential: Username+Password (basic auth, or the password grant of a
// token server), RefreshToken (an identity token) or AccessToken (a registry
// bearer token).
type Credential = auth.Credential

// EnvPrefix starts every credential environment variable.
const EnvPrefix = "ARGOCD_OCM_REGISTRY_"

// EnvCAFile names a PEM bundle of extra CA certificates trusted for every registry.
const EnvCAFile = EnvPrefix + "CA_FILE"

// maxSecretFile bounds a credential file; secrets are short.
const maxSecretFile = 64 << 10

// EnvName maps a registry host[:port] to the middle part of its credential
// variables: upper case, every character outside [A-Z0-9] replaced by "_".
// Several hosts fold to one name (registry.example.test, registry-example.test,
// REGISTRY_EXAMPLE.TEST); see envOwns for which host a name's credentials go to.
func EnvName(host string) string {
	b := []byte(strings.ToUpper(host))
	for i, c := range b {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

// EnvHostSuffix ends the variable that names the exact host of a set of
// credential variables: ARGOCD_OCM_REGISTRY_<NAME>_HOST=registry-example.test
// sends ARGOCD_OCM_REGISTRY_<NAME>_USERNAME/… to that host only.
const EnvHostSuffix = "_HOST"

// CanonicalHost is how hosts are compared: DNS names are case-insensitive,
// so the host is lower-cased; the port stays as written (":443" is not
// dropped: a credential is for the host[:port] it was configured for).
func CanonicalHost(host string) string {
	return strings.ToLower(strings.TrimSpace(host))
}

// envOwns reports whether the variables ARGOCD_OCM_REGISTRY_<EnvName(host)>_*
// hold credentials for host, and the exact host they were meant for.
//
// With ARGOCD_OCM_REGISTRY_<NAME>_HOST set, they belong to exactly that host
// (compared with CanonicalHost). Without it, the folded name is read back
// only for hosts it cannot be confused with: host names of letters, digits
// and dots whose last label is not all digits, and IPv4 addresses, each with
// an optional port. A host with "-" or "_" (registry-example.test) folds to
// the name of another (registry.example.test) and needs the _HOST variable.
func envOwns(lookup func(string) (string, bool), host string) bool {
	host = CanonicalHost(host)
	if h, ok := lookup(EnvPrefix + EnvName(host) + EnvHostSuffix); ok {
		return CanonicalHost(h) == host
	}
	return unambiguousEnvHost(host)
}

func unambiguousEnvHost(host string) bool {
	name, port, hasPort := strings.Cut(host, ":")
	if hasPort {
		if port == "" || strings.Trim(port, "0123456789") != "" {
			return false
		}
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		return ip.Is4()
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
			return false
		}
	}
	return strings.Trim(labels[len(labels)-1], "0123456789") != ""
}

// credentials resolves credentials per host. Values are never formatted into
// errors or logs.
type credentials struct {
	static     map[string]Credential
	lookupEnv  func(string) (string, bool)
	docker     map[string]Credential
	dockerPath string
}

// source says where the credential for host comes from ("" if none), for
// error messages; it never includes a value.
func (c *credentials) source(host string) string {
	host = CanonicalHost(host)
	if _, ok := c.static[host]; ok {
		return "client options"
	}
	name := EnvPrefix + EnvName(host) + "_"
	for _, k := range []string{"USERNAME", "PASSWORD", "TOKEN"} {
		if !envOwns(c.lookupEnv, host) {
			break
		}
		if _, ok := c.lookupEnv(name + k); ok {
			return "environment " + name + "*"
		}
		if _, ok := c.lookupEnv(name + k + "_FILE"); ok {
			return "environment " + name + "*_FILE"
		}
	}
	if _, ok := c.dockerLookup(host); ok {
		return "docker config " + c.dockerPath
	}
	return ""
}

// get implements auth.CredentialFunc.
func (c *credentials) get(_ context.Context, host string) (Credential, error) {
	host = CanonicalHost(host)
	if cred, ok := c.static[host]; ok {
		return cred, nil
	}
	cred, ok, err := c.fromEnv(host)
	if err != nil || ok {
		return cred, err
	}
	if cred, ok := c.dockerLookup(host); ok {
		return cred, nil
	}
	return auth.EmptyCredential, nil
}

func (c *credentials) fromEnv(host string) (Credential, bool, error) {
	if !envOwns(c.lookupEnv, host) {
		return auth.EmptyCredential, false, nil
	}
	cred, found, err := EnvCredential(c.lookupEnv, EnvName(host))
	if err != nil {
		return auth.EmptyCredential, false, fmt.Errorf("credentials for %s: %w", host, err)
	}
	return cred, found, nil
}

// EnvCredential reads ARGOCD_OCM_REGISTRY_<label>_USERNAME, _PASSWORD and
// _TOKEN, each also as _FILE naming a file that holds the value. found is
// false when none is set. Errors name variables and files, never values.
func EnvCredential(lookup func(string) (string, bool), label string) (cred Credential, found bool, err error) {
	name := EnvPrefix + label + "_"
	for _, f := range []struct {
		key string
		dst *string
	}{{"USERNAME", &cred.Username}, {"PASSWORD", &cred.Password}, {"TOKEN", &cred.AccessToken}} {
		if v, ok := lookup(name + f.key); ok {
			*f.dst, found = v, true
			continue
		}
		p, ok := lookup(name + f.key + "_FILE")
		if !ok {
			continue
		}
		v, err := ReadSecretFile(p)
		if err != nil {
			return auth.EmptyCredential, false, fmt.Errorf("%s%s_FILE: %w", name, f.key, err)
		}
		*f.dst, found = v, true
	}
	return cred, found, nil
}

// DockerConfigCredential is the credential a Docker config file holds for
// host ("auths" only; a missing file or entry is an empty credential).
func DockerConfigCredential(path, host string) (Credential, error) {
	m, _, err := loadDockerConfig(path)
	if err != nil {
		return auth.EmptyCredential, err
	}
	c := credentials{docker: m}
	cred, _ := c.dockerLookup(CanonicalHost(host))
	return cred, nil
}

// ReadSecretFile reads a mounted secret value (at most 64 KiB; one trailing
// newline removed). Errors name the file, never its content.
func ReadSecretFile(p string) (string, error) { return readSecretFile(p) }

func readSecretFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("file %s does not exist", p)
		}
		return "", fmt.Errorf("cannot open file %s", p)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", fmt.Errorf("cannot read file %s", p)
	}
	if len(b) > maxSecretFile {
		return "", fmt.Errorf("%w: file %s is larger than %d bytes", errdef.ErrLimitExceeded, p, maxSecretFile)
	}
	s := string(b)
	s = strings.TrimSuffix(s, "\n")
	s = strings.TrimSuffix(s, "\r")
	return s, nil
}

// dockerHubKeys are the keys Docker writes for Docker Hub.
var dockerHubKeys = []string{"https://index.docker.io/v1/", "index.docker.io", "docker.io", "registry-1.docker.io"}

func (c *credentials) dockerLookup(host string) (Credential, bool) {
	if c.docker == nil {
		return auth.EmptyCredential, false
	}
	if cred, ok := c.docker[host]; ok {
		return cred, true
	}
	if host == "docker.io" || host == "registry-1.docker.io" || host == "index.docker.io" {
		for _, k := range dockerHubKeys {
			if cred, ok := c.docker[dockerKey(k)]; ok {
				return cred, true
			}
		}
	}
	return auth.EmptyCredential, false
}

// dockerKey normalises an "auths" key to host[:port], as docker does.
func dockerKey(k string) string {
	k = strings.TrimPrefix(k, "http://")
	k = strings.TrimPrefix(k, "https://")
	k, _, _ = strings.Cut(k, "/")
	return CanonicalHost(k)
}

// DefaultDockerConfig returns the Docker config file the docker CLI would read:
// $DOCKER_CONFIG/config.json, else ~/.docker/config.json ("" if no home).
func DefaultDockerConfig() string {
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return filepath.Join(d, "config.json")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".docker", "config.json")
}

const maxDockerConfig = 4 << 20

type dockerAuth struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// loadDockerConfig reads a Docker config file. A missing file is no error.
// It returns a warning for credential helpers, which are not run.
func loadDockerConfig(p string) (map[string]Credential, string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", nil
		}
		return nil, "", fmt.Errorf("%w: docker config %s: cannot read it", errdef.ErrInvalidInput, p)
	}
	if len(b) > maxDockerConfig {
		return nil, "", fmt.Errorf("%w: docker config %s is larger than %d bytes", errdef.ErrLimitExceeded, p, maxDockerConfig)
	}
	var cfg struct {
		Auths       map[string]dockerAuth `json:"auths"`
		CredsStore  string                `json:"credsStore"`
		CredHelpers map[string]string     `json:"credHelpers"`
	}
	// The decoder's error could quote file content; report only the position class.
	if err := json.Unmarshal(b, &cfg); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, "", fmt.Errorf("%w: docker config %s is not valid JSON (syntax error at byte %d)", errdef.ErrInvalidInput, p, se.Offset)
		}
		return nil, "", fmt.Errorf("%w: docker config %s does not have the docker config layout", errdef.ErrInvalidInput, p)
	}
	out := map[string]Credential{}
	keys := make([]string, 0, len(cfg.Auths))
	for k := range cfg.Auths {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic when two keys normalise to one host
	for _, k := range keys {
		a := cfg.Auths[k]
		cred := Credential{Username: a.Username, Password: a.Password, RefreshToken: a.IdentityToken, AccessToken: a.RegistryToken}
		if a.Auth != "" {
			dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(a.Auth))
			if err != nil {
				return nil, "", fmt.Errorf("%w: docker config %s: auths[%s].auth is not base64", errdef.ErrInvalidInput, p, errdef.Quote(k))
			}
			u, pw, ok := strings.Cut(string(dec), ":")
			if !ok {
				return nil, "", fmt.Errorf("%w: docker config %s: auths[%s].auth is not base64(username:password)", errdef.ErrInvalidInput, p, errdef.Quote(k))
			}
			cred.Username, cred.Password = u, pw
		}
		if cred == auth.EmptyCredential {
			continue
		}
		host := dockerKey(k)
		if _, dup := out[host]; !dup {
			out[host] = cred
		}
	}
	warn := ""
	if cfg.CredsStore != "" || len(cfg.CredHelpers) > 0 {
		warn = fmt.Sprintf("docker config %s: credsStore/credHelpers are ignored (the plugin runs no credential helper binaries); put credentials in \"auths\" or the environment", p)
	}
	return out, warn, nil
}
