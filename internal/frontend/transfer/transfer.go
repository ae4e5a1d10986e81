package transfer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/accessmethod"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/artifactset"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ocimapping"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/bytesize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// Creator is the software.ocm.creator annotation of the manifests a
// transfer writes.
const Creator = "argocd-ocm-plugin"

// Transfer copies a component version (and with Recursive its references)
// from one OCM repository to another: CTF (directory, tar, tgz) or OCI
// registry, in every direction. Configure the exported fields, then Run.
type Transfer struct {
	// From and To are repository specs (see oci.ParseSpec): a CTF path
	// ("./bundle", "bundle.tgz") or a registry ("registry.example.com/ocm",
	// "http://127.0.0.1:5000/ocm"). A CTF target that does not exist is
	// created: a directory, or a tar/tgz when the name ends in .tar, .tgz
	// or .tar.gz.
	From, To string
	// Component and Version name the component version.
	Component, Version string
	// Recursive transfers the referenced component versions too.
	Recursive bool
	// CopyResources uploads local blobs that are OCI artifacts (Helm charts
	// as artifact sets, images carried in a CTF) into a registry target as
	// artifacts of their own and rewrites their access to ociArtifact,
	// as `ocm transfer --copy-resources` does. Other local blobs stay layers.
	CopyResources bool
	// CopyImages copies the OCI artifacts that ociArtifact accesses point at
	// (images) by digest: into a registry target as artifacts below its
	// prefix, into a CTF target as artifact set local blobs; the access is
	// rewritten to the copy. Without it, ociArtifact accesses are kept as
	// they are (`ocm transfer --omit-access-types ociArtifact`).
	CopyImages bool
	// DryRun plans and reports, and writes nothing.
	DryRun bool
	// Registry is the registry client of both sides (credentials, trust,
	// plain HTTP, the sidecar policy's gate); it must allow plain HTTP to
	// the http:// sides (see PlainHTTPHosts). Default:
	// registry.NewClient(RegistryOptions..., WithPlainHTTP(PlainHTTPHosts(From, To)...)).
	Registry        *registry.Client
	RegistryOptions []registry.Option
	// Progress receives one line per version, resource and copied blob,
	// and for a long blob a line every ProgressInterval (default 2s). nil:
	// silent.
	Progress         io.Writer
	ProgressInterval time.Duration
	// TempDir holds the temporary files of artifact sets (default os.TempDir()).
	TempDir string
}

// Summary is what a Run did (or, in a dry run, would do).
type Summary struct {
	Versions []VersionSummary
	// Blobs and Bytes copied (blobs and manifests); Present is the number
	// of blobs the target already held.
	Blobs, Bytes int64
	Present      int64
	DryRun       bool
}

// VersionSummary is one component version of a Run.
type VersionSummary struct {
	Component, Version string
	// Status is "copied", "present" (already in the target, skipped) or
	// "planned" (dry run).
	Status string
}

// Copied reports whether the run copied (or would copy) anything.
func (s *Summary) Copied() bool { return s.Blobs > 0 }

// String is the one-line summary.
func (s *Summary) String() string {
	var copied, present int
	for _, v := range s.Versions {
		if v.Status == "present" {
			present++
		} else {
			copied++
		}
	}
	if copied == 0 {
		return fmt.Sprintf("nothing to copy: %d component version(s) already present in the target", present)
	}
	verb := "copied"
	if s.DryRun {
		verb = "would copy"
	}
	return fmt.Sprintf("%s %d component version(s) (%d blobs, %s); %d already present; %d blobs were in the target already",
		verb, copied, s.Blobs, bytesize.Format(s.Bytes), present, s.Present)
}

// Run performs the transfer. Errors name the component, version and
// resource; nothing the target held is ever overwritten: a tag that names
// other content, or a version whose descriptor differs (in what its
// digest covers), is refused with errdef.ErrConflict.
func (t *Transfer) Run(ctx context.Context) (*Summary, error) {
	ectx := errdef.Error{Component: t.Component, Version: t.Version}
	if t.From == "" || t.To == "" || t.Component == "" || t.Version == "" {
		return nil, errdef.Wrap(fmt.Errorf("%w: from, to, component and version are required", errdef.ErrInvalidInput), ectx)
	}
	r := &run{t: t, seen: map[string]bool{}, sum: &Summary{DryRun: t.DryRun}, prog: newProgress(t.Progress, t.ProgressInterval)}
	r.reg = t.Registry
	if r.reg == nil {
		// The operator names both sides: an http:// side is a registry
		// they chose to reach over plain HTTP, with its credentials
		// (pushing needs a request body, which the registry client sends
		// over plain HTTP only to hosts the operator allowed).
		opts := append([]registry.Option{}, t.RegistryOptions...)
		opts = append(opts, registry.WithPlainHTTP(PlainHTTPHosts(t.From, t.To)...))
		// Mirrors serve readers; a transfer talks to both registries
		// themselves (a mirror's HEAD must not stand for the target's).
		opts = append(opts, registry.WithoutMirrors())
		c, err := registry.NewClient(opts...)
		if err != nil {
			return nil, errdef.Wrap(err, ectx)
		}
		r.reg = c
	}
	r.tmp = t.TempDir
	var err error
	if r.src, err = r.open(t.From, false); err != nil {
		return nil, errdef.Wrap(fmt.Errorf("source: %w", err), ectx)
	}
	defer r.src.Close()
	if r.dst, err = r.open(t.To, true); err != nil {
		return nil, errdef.Wrap(fmt.Errorf("target: %w", err), ectx)
	}
	defer r.dst.Close()
	if err := r.version(ctx, t.Component, t.Version); err != nil {
		return r.sum, err
	}
	if !t.DryRun {
		if err := r.dst.Commit(r.sum.Blobs > 0); err != nil {
			return r.sum, errdef.Wrap(err, ectx)
		}
	}
	r.prog.line("%s", r.sum)
	return r.sum, nil
}

type run struct {
	t        *Transfer
	reg      *registry.Client
	src, dst store
	seen     map[string]bool
	sum      *Summary
	prog     *progress
	tmp      string
	mu       sync.Mutex // sum, updated by concurrent copies
}

// open opens a side of the transfer.
func (r *run) open(spec string, target bool) (store, error) {
	sp, err := oci.ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	if sp.Type != oci.TypeCTF {
		return newRegistryStore(r.reg, sp)
	}
	p := sp.FilePath
	if !target {
		// Every form through package ctf, which confines and bounds it.
		return openCTFReader(p)
	}
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist) && r.t.DryRun:
		return emptyStore{name: p}, nil // a dry run creates nothing
	case err == nil && fi.IsDir():
		return openCTFDir(p, p)
	case err == nil && fi.Mode().IsRegular():
		return openCTFArchive(p)
	case err == nil:
		return nil, fmt.Errorf("%w: %s is neither a directory nor a file", errdef.ErrInvalidInput, p)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	case isArchiveName(p):
		return openCTFArchive(p)
	default:
		return openCTFDir(p, p)
	}
}

// PlainHTTPHosts are the hosts of the repository specs written with
// http://, which a transfer reaches over plain HTTP.
func PlainHTTPHosts(specs ...string) []string {
	var out []string
	for _, s := range specs {
		sp, err := oci.ParseSpec(s)
		if err != nil || sp.Type != oci.TypeOCIRegistry {
			continue
		}
		if l, err := parseLocation(sp); err == nil && l.scheme == "http" {
			out = append(out, l.host)
		}
	}
	return out
}

func isArchiveName(p string) bool {
	l := strings.ToLower(p)
	return strings.HasSuffix(l, ".tgz") || strings.HasSuffix(l, ".tar.gz") || strings.HasSuffix(l, ".tar")
}

// versionContent is a component version as its store holds it.
type versionContent struct {
	repo, tag    string
	manifestDesc ocispec.Descriptor
	manifestRaw  []byte
	manifest     *ocispec.Manifest
	configRaw    []byte
	layerDesc    ocispec.Descriptor // the descriptor layer
	layerRaw     []byte
	doc          []byte
	d            *ocm.Descriptor
	// ver is the version as ocimapping resolved it: the descriptor
	// manifest and the other manifests of the index the tag names.
	ver *ocimapping.Version
	// tagDesc is what the tag names: manifestDesc, or the image index of
	// a version written by the OCM CLI v0.13+ (index and indexRaw then).
	tagDesc  ocispec.Descriptor
	index    *ocispec.Index
	indexRaw []byte
}

// readVersion reads a version's manifest, config and descriptor, each
// verified against its digest.
func readVersion(ctx context.Context, s store, name, version string) (*versionContent, error) {
	v := &versionContent{repo: ocm.DescriptorRepository(name), tag: ocm.VersionToTag(version)}
	f, err := s.Repository(v.repo)
	if err != nil {
		return nil, err
	}
	desc, err := f.Resolve(ctx, v.tag)
	if err != nil {
		return nil, err
	}
	ver, err := ocimapping.ResolveVersion(ctx, f, desc)
	if err != nil {
		return nil, fmt.Errorf("%s: %s:%s: %w", s, v.repo, v.tag, err)
	}
	v.ver, v.manifest, v.manifestDesc = ver, ver.Manifest, ver.Desc
	if err := v.readManifests(ctx, f, desc); err != nil {
		return nil, err
	}
	if err := v.readConfig(ctx, f, s); err != nil {
		return nil, err
	}
	if err := v.readDescriptor(ctx, f, name, version); err != nil {
		return nil, err
	}
	return v, nil
}

// readManifests reads the descriptor manifest and, when the tag names an
// image index (OCM CLI v0.13+), that index: kept, entries and
// annotations, so that the copy stays in that format.
func (v *versionContent) readManifests(ctx context.Context, f ocimapping.Fetcher, desc ocispec.Descriptor) error {
	var err error
	if v.manifestDesc.Digest != desc.Digest {
		if desc, err = v.readIndex(ctx, f, desc); err != nil {
			return err
		}
	}
	if v.manifestRaw, err = ocimapping.FetchVerified(ctx, f, v.manifestDesc, ocimapping.MaxManifestSize); err != nil {
		return err
	}
	v.manifestDesc.Size = int64(len(v.manifestRaw))
	if v.manifestDesc.MediaType == "" {
		v.manifestDesc.MediaType = ocispec.MediaTypeImageManifest
	}
	v.tagDesc = v.manifestDesc
	if v.index != nil {
		v.tagDesc = desc
	}
	return nil
}

// readIndex reads the image index the tag names (desc) and returns desc
// with the size and media type of what was read.
func (v *versionContent) readIndex(ctx context.Context, f ocimapping.Fetcher, desc ocispec.Descriptor) (ocispec.Descriptor, error) {
	var err error
	if v.indexRaw, err = ocimapping.FetchVerified(ctx, f, desc, ocimapping.MaxManifestSize); err != nil {
		return desc, fmt.Errorf("index: %w", err)
	}
	v.index = &ocispec.Index{}
	if err := json.Unmarshal(v.indexRaw, v.index); err != nil {
		return desc, fmt.Errorf("%w: index %s: %v", errdef.ErrInvalidDescriptor, desc.Digest, err)
	}
	desc.Size = int64(len(v.indexRaw))
	if desc.MediaType = v.index.MediaType; desc.MediaType == "" {
		desc.MediaType = ocispec.MediaTypeImageIndex
	}
	return desc, nil
}

// readConfig reads the OCM component config (refusing another artifact
// under the tag) and from it the descriptor layer: the one the config
// names, else the manifest's first layer.
func (v *versionContent) readConfig(ctx context.Context, f ocimapping.Fetcher, s store) error {
	m := v.manifest
	switch m.Config.MediaType {
	case ocimapping.MediaTypeComponentConfig, ocimapping.MediaTypeLegacyComponentConfig, ocimapping.MediaTypeLegacyComponentConfig2:
	default:
		return fmt.Errorf("%w: %s: %s:%s is not an OCM component version (config %s)", errdef.ErrConflict, s, v.repo, v.tag, errdef.Quote(m.Config.MediaType))
	}
	var err error
	if v.configRaw, err = ocimapping.FetchVerified(ctx, f, m.Config, ocimapping.MaxConfigSize); err != nil {
		return fmt.Errorf("component config: %w", err)
	}
	var cfg struct {
		Layer *ocispec.Descriptor `json:"componentDescriptorLayer"`
	}
	if err := json.Unmarshal(v.configRaw, &cfg); err != nil {
		return fmt.Errorf("%w: component config: %v", errdef.ErrInvalidDescriptor, err)
	}
	switch {
	case cfg.Layer != nil:
		v.layerDesc = *cfg.Layer
	case len(m.Layers) > 0:
		v.layerDesc = m.Layers[0]
	default:
		return fmt.Errorf("%w: the manifest has no descriptor layer", errdef.ErrInvalidDescriptor)
	}
	for _, l := range m.Layers {
		if l.Digest == v.layerDesc.Digest && v.layerDesc.MediaType == "" {
			v.layerDesc.MediaType = l.MediaType
		}
	}
	return nil
}

// readDescriptor reads and decodes the descriptor layer, which must hold
// the descriptor of name:version.
func (v *versionContent) readDescriptor(ctx context.Context, f ocimapping.Fetcher, name, version string) error {
	var err error
	if v.layerRaw, err = ocimapping.FetchVerified(ctx, f, v.layerDesc, ocm.MaxDescriptorSize+64<<10); err != nil {
		return fmt.Errorf("descriptor layer: %w", err)
	}
	if v.doc, err = descriptorDocument(v.layerDesc.MediaType, v.layerRaw); err != nil {
		return err
	}
	if v.d, err = ocm.DecodeDescriptor(v.doc); err != nil {
		return err
	}
	if v.d.Name != name || v.d.Version != version {
		return fmt.Errorf("%w: %s:%s holds the descriptor of %s:%s", errdef.ErrInvalidDescriptor, v.repo, v.tag, v.d.Name, v.d.Version)
	}
	return nil
}

// version transfers one component version, its references first when
// Recursive.
func (r *run) version(ctx context.Context, name, version string) error {
	key := name + ":" + version
	if r.seen[key] {
		return nil
	}
	r.seen[key] = true
	ectx := errdef.Error{Component: name, Version: version}
	if err := ctx.Err(); err != nil {
		return errdef.Wrap(err, ectx)
	}
	// A reference's name and version come from a descriptor: they become a
	// repository and a tag of both stores.
	if err := checkVersionName(name, version); err != nil {
		return errdef.Wrap(err, ectx)
	}
	r.prog.line("transferring version %s...", errdef.Quote(key))
	sv, err := readVersion(ctx, r.src, name, version)
	if err != nil {
		if errors.Is(err, errdef.ErrNotFound) {
			err = r.notFound(ctx, name, version, err)
		}
		return errdef.Wrap(fmt.Errorf("source %s: %w", r.src, err), ectx)
	}
	if r.t.Recursive {
		for _, ref := range sv.d.References {
			if err := r.version(ctx, ref.ComponentName, ref.Version); err != nil {
				return errdef.Wrap(err, errdef.Error{Component: name, Version: version, Resource: "reference " + ref.Name})
			}
		}
	}
	present, err := r.present(ctx, sv)
	if err != nil {
		return errdef.Wrap(err, ectx)
	}
	if present {
		r.prog.line("  version %s already present -> skip transport", errdef.Quote(key))
		r.sum.Versions = append(r.sum.Versions, VersionSummary{Component: name, Version: version, Status: "present"})
		return nil
	}
	p, err := r.plan(ctx, sv)
	defer p.close()
	if err != nil {
		return errdef.Wrap(err, ectx)
	}
	status := "planned"
	if r.t.DryRun {
		r.sum.Blobs += int64(len(p.nodes))
		r.sum.Bytes += p.bytes
		r.sum.Present += p.present
		p.report(r.prog)
	} else {
		if err := r.execute(ctx, p); err != nil {
			return errdef.Wrap(err, ectx)
		}
		status = "copied"
		r.prog.line("  ...added component version %s", errdef.Quote(key))
	}
	r.sum.Versions = append(r.sum.Versions, VersionSummary{Component: name, Version: version, Status: status})
	return nil
}

// checkVersionName refuses a component version whose descriptor repository
// or tag is not an OCI name.
func checkVersionName(name, version string) error {
	if err := checkRepositoryName("the descriptor repository of component "+errdef.Quote(name)+",", ocm.DescriptorRepository(name)); err != nil {
		return err
	}
	return checkTag("the tag of version "+errdef.Quote(version)+",", ocm.VersionToTag(version))
}

// tagLister is a store that can list a repository's tags.
type tagLister interface {
	Tags(ctx context.Context, repo string) ([]string, error)
}

// notFound says which versions the source has, when it can list them.
func (r *run) notFound(ctx context.Context, name, version string, cause error) error {
	l, ok := r.src.(tagLister)
	if !ok {
		return cause
	}
	tags, err := l.Tags(ctx, ocm.DescriptorRepository(name))
	if err != nil || len(tags) == 0 {
		return fmt.Errorf("component %s %w", name, errdef.ErrNotFound)
	}
	var versions []string
	for _, t := range tags {
		versions = append(versions, ocm.TagToVersion(t))
	}
	oci.SortVersions(versions)
	return fmt.Errorf("version %s of component %s %w (available: %s)", version, name, errdef.ErrNotFound, errdef.Cut(strings.Join(versions, ", ")))
}

// present reports whether the target holds the version already. A target
// whose version differs in what the signature digest covers, or whose tag
// names something that is not this component version, is a conflict.
func (r *run) present(ctx context.Context, sv *versionContent) (bool, error) {
	tv, err := readVersion(ctx, r.dst, sv.d.Name, sv.d.Version)
	if errors.Is(err, errdef.ErrNotFound) {
		if t, rerr := r.dst.Repository(sv.repo); rerr == nil {
			if _, rerr := t.Resolve(ctx, sv.tag); rerr != nil && errors.Is(rerr, errdef.ErrNotFound) {
				return false, nil
			}
		}
	}
	if err != nil {
		if !foreignContent(err) {
			// The target did not show what the tag holds: say what
			// happened, and no conflict that an operator would clear by
			// deleting tags.
			return false, fmt.Errorf("target %s: reading tag %s of %s: %w", r.dst, sv.tag, sv.repo, err)
		}
		return false, fmt.Errorf("%w: target %s: tag %s of %s holds something that is not this component version, nothing was overwritten: %w",
			errdef.ErrConflict, r.dst, sv.tag, sv.repo, err)
	}
	if tv.tagDesc.Digest == sv.tagDesc.Digest || tv.manifestDesc.Digest == sv.manifestDesc.Digest {
		return true, nil
	}
	a, errA := signing.Digest(sv.d, signing.JSONNormalisationV3, "SHA-256")
	b, errB := signing.Digest(tv.d, signing.JSONNormalisationV3, "SHA-256")
	if errA == nil && errB == nil && a == b {
		return true, nil
	}
	return false, fmt.Errorf("%w: target %s already holds %s:%s with another descriptor (normalised digest %s, the source's is %s); nothing was overwritten",
		errdef.ErrConflict, r.dst, sv.d.Name, sv.d.Version, orUnknown(b, errB), orUnknown(a, errA))
}

// foreignContent reports whether err, from reading the target's tag of a
// version, is about what the tag names: content that was read and is
// another artifact or another descriptor. A failed connection, timeout,
// refused credentials, a protocol mismatch or a server error (the registry
// client's errors) and content that could not be read whole (a missing or
// corrupt blob) are not: the target may well hold the version.
func foreignContent(err error) bool {
	var re *registry.Error
	if errors.As(err, &re) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	return errors.Is(err, errdef.ErrConflict) || errors.Is(err, errdef.ErrInvalidDescriptor) || errors.Is(err, errdef.ErrUnsupportedMediaType)
}

func orUnknown(s string, err error) string {
	if err != nil {
		return "unknown"
	}
	return s
}

// plan decides what to copy for one version and builds its new descriptor.
func (r *run) plan(ctx context.Context, sv *versionContent) (*plan, error) {
	p := &plan{seen: map[string]bool{}}
	doc, err := parseDocument(sv.doc)
	if err != nil {
		return p, err
	}
	loc := r.dst.Registry()
	rp, err := r.planResources(ctx, p, sv, doc, loc)
	if err != nil {
		return p, err
	}
	rp.markSourceBlobs(sv)
	layers := keptLayers(sv, rp)
	if loc != nil {
		if err := doc.appendContext(loc.repositoryContext()); err != nil {
			return p, err
		}
		rp.changed = true
	}
	if !rp.changed {
		return p, r.planUnchanged(ctx, p, sv)
	}
	return p, r.planRewritten(ctx, p, sv, doc, append(layers, rp.extra...), rp)
}

// resourcePlan is what planning a version's resources decided about the
// layers of its manifest.
type resourcePlan struct {
	changed  bool                   // the descriptor is rewritten
	exploded map[digest.Digest]bool // layers that became artifacts
	local    map[digest.Digest]bool // layers still named by a localBlob
	extra    []ocispec.Descriptor   // new layers (images carried into a CTF)
	// dropped are index entries (OCM CLI v0.13+ artifacts) that became
	// artifacts of their own; the index keeps the others.
	dropped map[digest.Digest]bool
	// made are the new layers' content, names their resources.
	made  map[digest.Digest]func() io.ReadCloser
	names map[digest.Digest]string
}

// planResources plans the artifacts of each resource and rewrites the
// access of those that move in doc.
func (r *run) planResources(ctx context.Context, p *plan, sv *versionContent, doc *document, loc *location) (*resourcePlan, error) {
	rp := &resourcePlan{exploded: map[digest.Digest]bool{}, local: map[digest.Digest]bool{}, dropped: map[digest.Digest]bool{},
		made: map[digest.Digest]func() io.ReadCloser{}, names: map[digest.Digest]string{}}
	for i, res := range sv.d.Resources {
		var err error
		// Layers of the version's manifest move with it; artifacts named
		// by reference are copied by digest; other accesses stay as written.
		switch m, _ := accessmethod.Lookup(res.Access.Type); {
		case m.Layer:
			err = r.planLocalResource(ctx, p, sv, doc, loc, rp, i, res)
		case m.Artifact:
			err = r.planExternalResource(ctx, p, doc, rp, i, res)
		}
		if err != nil {
			return rp, err
		}
	}
	return rp, nil
}

// planLocalResource plans resource i, a localBlob: kept as a layer, or
// exploded into an OCI artifact of the target registry.
func (r *run) planLocalResource(ctx context.Context, p *plan, sv *versionContent, doc *document, loc *location, rp *resourcePlan, i int, res ocm.Resource) error {
	rid := resourceName(res)
	acc := res.Access
	layers, artifact, err := sv.ver.LocalBlob(acc.String("localReference"))
	if err != nil {
		return errdef.Wrap(err, errdef.Error{Resource: rid})
	}
	if artifact != nil {
		if err := r.planLocalArtifact(ctx, p, sv, doc, loc, rp, i, res, *artifact); err != nil {
			return errdef.Wrap(err, errdef.Error{Resource: rid})
		}
		return nil
	}
	if r.t.CopyResources && loc != nil && artifactset.IsArtifactSet(acc.String("mediaType")) {
		r.prog.line("  ...resource %d %s[%s](%s) as an OCI artifact...", i, res.Name, res.Type, acc.String("referenceName"))
		ref, err := r.planExplode(ctx, p, sv, layers, acc.String("referenceName"), res)
		if err != nil {
			return errdef.Wrap(err, errdef.Error{Resource: rid})
		}
		if err := doc.setAccess(i, map[string]any{"type": ocm.AccessOCIArtifact, "imageReference": ref}); err != nil {
			return err
		}
		rp.changed = true
		for _, l := range layers {
			rp.exploded[l.Digest] = true
		}
		return nil
	}
	r.prog.line("  ...resource %d %s[%s]...", i, res.Name, res.Type)
	for _, l := range layers {
		rp.local[l.Digest] = true
	}
	return nil
}

// planLocalArtifact plans resource i, a local blob that is a manifest of
// the version's index (OCM CLI v0.13+): with CopyResources into a
// registry, its manifest and layers become an artifact of their own
// (<prefix>/<referenceName>, else the version's repository) and the access
// ociArtifact; otherwise it stays an entry of the index (planIndexArtifacts).
func (r *run) planLocalArtifact(ctx context.Context, p *plan, sv *versionContent, doc *document, loc *location, rp *resourcePlan, i int, res ocm.Resource, entry ocispec.Descriptor) error {
	if err := checkArtifactDigest(res, entry.Digest.String()); err != nil {
		return err
	}
	if res.Digest != nil && res.Digest.NormalisationAlgorithm == "genericBlobDigest/v1" && "sha256:"+res.Digest.Value != entry.Digest.String() {
		return fmt.Errorf("%w: the artifact's manifest is %s, the resource's digest says sha256:%s", errdef.ErrDigestMismatch, entry.Digest, res.Digest.Value)
	}
	if !r.t.CopyResources || loc == nil {
		r.prog.line("  ...resource %d %s[%s] (an artifact of the index)...", i, res.Name, res.Type)
		return nil
	}
	hint := res.Access.String("referenceName")
	r.prog.line("  ...resource %d %s[%s](%s) as an OCI artifact...", i, res.Name, res.Type, hint)
	name, tag := splitHint(hint)
	if name == "" {
		name = sv.repo // no hint: the component's own repository, as for artifact sets
	} else if err := checkRepositoryName("referenceName", name); err != nil {
		return err
	}
	if tag != "" {
		if err := checkTag("the tag of referenceName "+errdef.Quote(hint)+",", tag); err != nil {
			return err
		}
	}
	src, err := r.srcRepo(sv.repo)
	if err != nil {
		return err
	}
	if err := r.addArtifact(ctx, p, src, entry, name, tag, res.Name); err != nil {
		return err
	}
	if err := doc.setAccess(i, map[string]any{"type": ocm.AccessOCIArtifact, "imageReference": loc.imageReference(name, tag, entry.Digest.String())}); err != nil {
		return err
	}
	rp.changed = true
	rp.dropped[entry.Digest] = true
	return nil
}

// localArtifactName names the resource an index entry holds, for errors.
func localArtifactName(d *ocm.Descriptor, e ocispec.Descriptor) string {
	for _, res := range d.Resources {
		if res.Access.Kind() == ocm.AccessLocalBlob && strings.TrimSpace(res.Access.String("localReference")) == e.Digest.String() {
			return resourceName(res)
		}
	}
	return path.Base(e.Digest.String())
}

// planExternalResource plans resource i, an OCI artifact kept apart from
// the version, and rewrites its access when it is copied.
func (r *run) planExternalResource(ctx context.Context, p *plan, doc *document, rp *resourcePlan, i int, res ocm.Resource) error {
	// Images (external resources) with CopyImages; the component's
	// own artifacts a registry holds apart from it (charts an
	// earlier transfer uploaded) with CopyResources, so that a
	// bundle made from a registry carries them.
	if !r.t.CopyImages && !(r.t.CopyResources && res.Relation == "local") {
		return nil
	}
	r.prog.line("  ...resource %d %s[%s](%s) by digest...", i, res.Name, res.Type, res.Access.String("imageReference"))
	access, layer, open, err := r.planImage(ctx, p, res)
	if err != nil {
		return errdef.Wrap(err, errdef.Error{Resource: resourceName(res)})
	}
	if err := doc.setAccess(i, access); err != nil {
		return err
	}
	if layer != nil {
		rp.extra = append(rp.extra, *layer)
		rp.local[layer.Digest] = true
		rp.made[layer.Digest] = open
		rp.names[layer.Digest] = res.Name
	}
	rp.changed = true
	return nil
}

// markSourceBlobs marks the layers the version's localBlob sources name,
// so that they are copied even when a resource shares them.
func (rp *resourcePlan) markSourceBlobs(sv *versionContent) {
	for _, s := range sv.d.Sources {
		if s.Access.Kind() != ocm.AccessLocalBlob {
			continue
		}
		if layers, err := ocimapping.LocalBlobLayers(sv.manifest, s.Access.String("localReference")); err == nil {
			for _, l := range layers {
				rp.local[l.Digest] = true
			}
		}
	}
}

// keptLayers are the layers of the source manifest the new manifest
// keeps: local blobs, unless they became artifacts (the descriptor layer
// is rewritten or kept apart).
func keptLayers(sv *versionContent, rp *resourcePlan) []ocispec.Descriptor {
	var layers []ocispec.Descriptor
	for _, l := range sv.manifest.Layers {
		if l.Digest == sv.layerDesc.Digest {
			continue
		}
		if rp.exploded[l.Digest] && !rp.local[l.Digest] {
			continue
		}
		layers = append(layers, l)
	}
	return layers
}

// planUnchanged plans a version with nothing to rewrite (into a CTF): the
// graph its tag names, byte for byte.
func (r *run) planUnchanged(ctx context.Context, p *plan, sv *versionContent) error {
	st, err := r.src.Repository(sv.repo)
	if err != nil {
		return err
	}
	j, err := r.versionJob(sv, st, sv.tagDesc, nil)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(sv.manifest.Layers, func(l ocispec.Descriptor) bool { return l.Digest == sv.layerDesc.Digest }) {
		// The config names a descriptor layer its manifest does not list.
		j.extra = map[digest.Digest][]ocispec.Descriptor{sv.manifestDesc.Digest: {sv.layerDesc}}
	}
	return r.addJob(ctx, p, j)
}

// versionJob is the copy of a version's graph under root, read from st,
// pushed last (after the artifacts of its resources), under its tag.
func (r *run) versionJob(sv *versionContent, st content.ReadOnlyStorage, root ocispec.Descriptor, rp *resourcePlan) (*copyJob, error) {
	dst, err := r.dstRepo(sv.repo)
	if err != nil {
		return nil, err
	}
	names := map[digest.Digest]string{}
	for _, l := range sv.manifest.Layers {
		if l.Digest != sv.layerDesc.Digest {
			names[l.Digest] = layerResource(sv.d, l)
		}
	}
	for _, e := range sv.ver.Artifacts {
		names[e.Digest] = localArtifactName(sv.d, e)
	}
	if rp != nil {
		maps.Copy(names, rp.names)
	}
	return &copyJob{src: newSource(st, r.src.String()), dst: dst, repo: sv.repo, root: root, tag: sv.tag, names: names}, nil
}

// srcRepo is repository repo of the source, as a source of graphs.
func (r *run) srcRepo(repo string) (*source, error) {
	t, err := r.src.Repository(repo)
	if err != nil {
		return nil, err
	}
	return newSource(t, r.src.String()), nil
}

func (r *run) dstRepo(repo string) (*jobTarget, error) {
	t, err := r.dst.Repository(repo)
	if err != nil {
		return nil, err
	}
	return &jobTarget{Target: t}, nil
}

// addArtifact plans the copy of the artifact under root, read from src,
// into repository repo of the target, the root under tag.
func (r *run) addArtifact(ctx context.Context, p *plan, src *source, root ocispec.Descriptor, repo, tag, res string) error {
	dst, err := r.dstRepo(repo)
	if err != nil {
		return err
	}
	if root, err = rootOf(ctx, src, root); err != nil {
		return err
	}
	return r.addJob(ctx, p, &copyJob{src: src, dst: dst, repo: repo, root: root, tag: tag, res: res})
}

// planRewritten plans a version whose descriptor doc was rewritten: a new
// descriptor layer, config and manifest over layers, once the rewrite is
// proven to keep every signature.
func (r *run) planRewritten(ctx context.Context, p *plan, sv *versionContent, doc *document, layers []ocispec.Descriptor, rp *resourcePlan) error {
	newDoc, err := doc.marshal()
	if err != nil {
		return err
	}
	if err := keepsSignatures(sv.d, newDoc); err != nil {
		return err
	}
	layerType := ocimapping.MediaTypeDescriptorTar
	var layerRaw []byte
	if strings.HasSuffix(sv.layerDesc.MediaType, "+json") {
		// The OCM CLI v0.13's JSON descriptor layer stays JSON.
		layerType = sv.layerDesc.MediaType
		layerRaw, err = yaml.YAMLToJSON(newDoc)
	} else {
		layerRaw, err = descriptorLayer(newDoc)
	}
	if err != nil {
		return err
	}
	descLayer := ocispec.Descriptor{MediaType: layerType, Digest: digest.FromBytes(layerRaw), Size: int64(len(layerRaw))}
	cfgRaw, err := json.Marshal(map[string]any{"componentDescriptorLayer": descLayer})
	if err != nil {
		return err
	}
	cfg := ocispec.Descriptor{MediaType: ocimapping.MediaTypeComponentConfig, Digest: digest.FromBytes(cfgRaw), Size: int64(len(cfgRaw))}
	mraw, err := versionManifest(sv, cfg, append([]ocispec.Descriptor{descLayer}, layers...))
	if err != nil {
		return err
	}
	md := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(mraw), Size: int64(len(mraw))}
	// The new nodes are served over the source's; oras.CopyGraph copies
	// the graph under the new root as any other.
	st, err := r.src.Repository(sv.repo)
	if err != nil {
		return err
	}
	o := &overlay{ReadOnlyStorage: st, made: maps.Clone(rp.made)}
	o.add(cfg.Digest, cfgRaw)
	o.add(descLayer.Digest, layerRaw)
	o.add(md.Digest, mraw)
	root := md
	if sv.index != nil {
		iraw, err := versionIndex(sv, md, rp.dropped)
		if err != nil {
			return err
		}
		root = ocispec.Descriptor{MediaType: sv.tagDesc.MediaType, Digest: digest.FromBytes(iraw), Size: int64(len(iraw))}
		o.add(root.Digest, iraw)
	}
	j, err := r.versionJob(sv, o, root, rp)
	if err != nil {
		return err
	}
	return r.addJob(ctx, p, j)
}

// versionIndex encodes the new index of a rewritten OCM CLI v0.13+ version:
// the source's, its descriptor entry pointing at the new manifest md (its
// annotations and artifactType kept), without the entries that became
// artifacts of their own, this plugin as creator.
func versionIndex(sv *versionContent, md ocispec.Descriptor, dropped map[digest.Digest]bool) ([]byte, error) {
	idx := *sv.index
	idx.Manifests = nil
	for _, e := range sv.index.Manifests {
		switch {
		case e.Digest == sv.manifestDesc.Digest:
			e.Digest, e.Size = md.Digest, md.Size
			e.Annotations = withCreator(e.Annotations)
		case dropped[e.Digest]:
			continue
		}
		idx.Manifests = append(idx.Manifests, e)
	}
	idx.Annotations = withCreator(idx.Annotations)
	return json.Marshal(idx)
}

// withCreator is a copy of ann naming this plugin as creator, when ann
// names one.
func withCreator(ann map[string]string) map[string]string {
	if _, ok := ann["software.ocm.creator"]; !ok {
		return ann
	}
	ann = maps.Clone(ann)
	ann["software.ocm.creator"] = Creator
	return ann
}

// versionManifest encodes the new manifest of a rewritten version: the
// source's annotations, with this plugin as creator.
func versionManifest(sv *versionContent, cfg ocispec.Descriptor, layers []ocispec.Descriptor) ([]byte, error) {
	ann := maps.Clone(sv.manifest.Annotations)
	if ann == nil {
		ann = map[string]string{}
	}
	ann[ocimapping.AnnotationComponentVersion] = sv.d.Name + ":" + sv.d.Version
	ann["software.ocm.creator"] = Creator
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: sv.manifest.ArtifactType, Config: cfg, Layers: layers, Annotations: ann}
	m.SchemaVersion = 2
	return json.Marshal(m)
}

// keepsSignatures checks, before anything is written, that the rewritten
// descriptor has the digest every signature of the source signed: the
// rewrites touch only what normalisation leaves out (access,
// repositoryContexts), and this proves it for each signature's algorithm.
func keepsSignatures(src *ocm.Descriptor, newDoc []byte) error {
	if len(src.Signatures) == 0 {
		return nil
	}
	nd, err := ocm.DecodeDescriptor(newDoc)
	if err != nil {
		return fmt.Errorf("rewritten descriptor: %w", err)
	}
	for _, s := range src.Signatures {
		before, err := signing.Digest(src, s.Digest.NormalisationAlgorithm, s.Digest.HashAlgorithm)
		if err != nil {
			continue // an algorithm this plugin cannot compute: kept as it is
		}
		after, err := signing.Digest(nd, s.Digest.NormalisationAlgorithm, s.Digest.HashAlgorithm)
		if err != nil || after != before {
			return fmt.Errorf("%w: signature %s: the rewritten descriptor's digest %s differs from %s", errdef.ErrSignature, s.Name, after, before)
		}
	}
	return nil
}

// planExplode reads a local blob that is an artifact set and plans it as an
// artifact of the target registry: repository <prefix>/<referenceName
// without tag>, tagged with referenceName's tag, as the OCM CLI's OCI
// blob handler does. It returns the new imageReference.
func (r *run) planExplode(ctx context.Context, p *plan, sv *versionContent, layers []ocispec.Descriptor, hint string, res ocm.Resource) (string, error) {
	st, err := r.src.Repository(sv.repo)
	if err != nil {
		return "", err
	}
	rc, size, err := ocimapping.OpenLayers(ctx, st, layers)
	if err != nil {
		return "", err
	}
	set, err := artifactset.Open(rc, size, r.tmp)
	rc.Close()
	if err != nil {
		return "", err
	}
	p.closers = append(p.closers, set)
	name, tag := splitHint(hint)
	if name == "" {
		name = sv.repo // no hint: the component's own repository, as the OCM CLI does
	} else if err := checkRepositoryName("referenceName", name); err != nil {
		return "", err
	}
	if tag == "" {
		tag = set.Tag
	}
	if tag != "" {
		if err := checkTag("the tag of referenceName "+errdef.Quote(hint)+",", tag); err != nil {
			return "", err
		}
	}
	if err := checkArtifactDigest(res, set.Main.Digest.String()); err != nil {
		return "", err
	}
	if err := r.addArtifact(ctx, p, newSource(set, r.src.String()), set.Main, name, tag, res.Name); err != nil {
		return "", err
	}
	return r.dst.Registry().imageReference(name, tag, set.Main.Digest.String()), nil
}

// splitHint splits a reference hint "name[:tag][@digest]".
func splitHint(hint string) (name, tag string) {
	name, _, _ = strings.Cut(hint, "@")
	if i := strings.LastIndex(name, ":"); i > 0 && !strings.Contains(name[i:], "/") {
		name, tag = name[:i], name[i+1:]
	}
	return name, tag
}

// checkArtifactDigest compares an artifact's manifest digest with the
// resource's ociArtifactDigest/v1 digest, when it has one.
func checkArtifactDigest(res ocm.Resource, manifestDigest string) error {
	if res.Digest == nil || res.Digest.NormalisationAlgorithm != "ociArtifactDigest/v1" {
		return nil
	}
	if "sha256:"+res.Digest.Value != manifestDigest {
		return fmt.Errorf("%w: the artifact's manifest is %s, the resource's digest says sha256:%s", errdef.ErrDigestMismatch, manifestDigest, res.Digest.Value)
	}
	return nil
}

// planImage plans the copy of the artifact an ociArtifact access names
// (into a registry: an artifact below the target's prefix; into a CTF: an
// artifact set local blob) and returns the new access, and for a CTF the
// new layer.
func (r *run) planImage(ctx context.Context, p *plan, res ocm.Resource) (map[string]any, *ocispec.Descriptor, func() io.ReadCloser, error) {
	srcLoc := r.src.Registry()
	image, err := imageOf(res, srcLoc)
	if err != nil {
		return nil, nil, nil, err
	}
	ref, err := imageref.Parse(image)
	if err != nil {
		return nil, nil, nil, err
	}
	if ref.Scheme == "http" {
		r.reg.AllowPlainHTTP(ref.Registry)
	}
	repo, err := r.reg.Repository(ref)
	if err != nil {
		return nil, nil, nil, err
	}
	root, err := repo.Resolve(ctx, ref.Ref())
	if err != nil {
		return nil, nil, nil, r.reg.Wrap(err, "resolve image", ref)
	}
	if ref.Digest != "" && root.Digest.String() != ref.Digest {
		return nil, nil, nil, fmt.Errorf("%w: %s resolved to %s", errdef.ErrDigestMismatch, ref, root.Digest)
	}
	if err := checkArtifactDigest(res, root.Digest.String()); err != nil {
		return nil, nil, nil, err
	}
	imgRef := ref
	imgRef.Tag, imgRef.Digest = "", ""
	src := newSource(&registryRepo{reg: r.reg, r: repo, ref: imgRef}, r.src.String())
	name := carriedName(ref, srcLoc)
	if err := checkRepositoryName("the repository of image "+errdef.Quote(image)+",", name); err != nil {
		return nil, nil, nil, err
	}
	if ref.Tag != "" {
		if err := checkTag("the tag of image "+errdef.Quote(image)+",", ref.Tag); err != nil {
			return nil, nil, nil, err
		}
	}
	if loc := r.dst.Registry(); loc != nil {
		if err := r.addArtifact(ctx, p, src, root, name, ref.Tag, res.Name); err != nil {
			return nil, nil, nil, err
		}
		return map[string]any{"type": ocm.AccessOCIArtifact, "imageReference": loc.imageReference(name, ref.Tag, root.Digest.String())}, nil, nil, nil
	}
	return r.planImageSet(ctx, p, src, root, name, ref.Tag, res)
}

// imageOf is the image reference of an ociArtifact access; a
// relativeOciReference is relative to the registry that hosts the
// component (host only).
func imageOf(res ocm.Resource, srcLoc *location) (string, error) {
	image := res.Access.String("imageReference")
	if res.Access.Kind() != ocm.AccessRelativeOCIReference {
		return image, nil
	}
	if srcLoc == nil {
		return "", fmt.Errorf("%w: relativeOciReference in a CTF names no registry", errdef.ErrInvalidDescriptor)
	}
	image = srcLoc.host + "/" + strings.TrimPrefix(res.Access.String("reference"), "/")
	if srcLoc.scheme != "" {
		image = srcLoc.scheme + "://" + image
	}
	return image, nil
}

// carriedName is the image's name below the target's prefix: its
// repository, without the source repository's prefix when it lives there
// (as the OCM CLI's reference hint keeps names stable across transfers).
func carriedName(ref imageref.Reference, srcLoc *location) string {
	name := ref.Repository
	if srcLoc != nil && ref.Registry == srcLoc.host && srcLoc.prefix != "" && strings.HasPrefix(name, srcLoc.prefix+"/") {
		name = strings.TrimPrefix(name, srcLoc.prefix+"/")
	}
	return name
}

// planImageSet copies the graph under root (read from src) with
// oras.CopyGraph into a spool directory (a CTF blob store, verified on the
// way), and writes it from there as an artifact set local blob of a CTF,
// its blobs in the order the graph lists them (so that the same image
// makes the same set); it returns the localBlob access, the layer and its
// content.
func (r *run) planImageSet(ctx context.Context, p *plan, src *source, root ocispec.Descriptor, name, tag string, res ocm.Resource) (map[string]any, *ocispec.Descriptor, func() io.ReadCloser, error) {
	root, err := rootOf(ctx, src, root)
	if err != nil {
		return nil, nil, nil, err
	}
	spool, err := os.MkdirTemp(r.tmp, "argocd-ocm-transfer-image-*")
	if err != nil {
		return nil, nil, nil, err
	}
	defer os.RemoveAll(spool)
	w, err := ctf.OpenWriter(spool, "image spool "+spool)
	if err != nil {
		return nil, nil, nil, err
	}
	st := w.Storage("")
	j := &copyJob{src: src}
	g := newGraph(src, root, nil)
	src.reset()
	if err := oras.CopyGraph(ctx, src, st, root, j.options(g)); err != nil {
		_, err := j.failure(g, err)
		return nil, nil, nil, err
	}
	set, err := artifactset.Write(ctx, st.Fetch, root, tag, r.tmp, g.walk(root))
	if err != nil {
		return nil, nil, nil, err
	}
	p.closers = append(p.closers, set.File)
	layer := set.Desc
	id, _ := json.Marshal([]any{map[string]any{"kind": "resource", "identity": res.Identity()}})
	layer.Annotations = map[string]string{ocimapping.AnnotationArtifact: string(id)}
	f := set.File
	open := func() io.ReadCloser { return io.NopCloser(io.NewSectionReader(f, 0, layer.Size)) }
	hint := name
	if tag != "" {
		hint += ":" + tag
	}
	return map[string]any{"type": ocm.AccessLocalBlob, "localReference": layer.Digest.String(), "mediaType": layer.MediaType, "referenceName": hint}, &layer, open, nil
}

// execute copies what the plan found missing, artifact by artifact, the
// version's own graph last, so that a version present in the target is
// always complete.
func (r *run) execute(ctx context.Context, p *plan) error {
	r.prog.start(int64(len(p.nodes)), p.bytes)
	defer r.prog.finish()
	r.sum.Present += p.present
	for _, j := range p.jobs {
		if err := r.copy(ctx, j); err != nil {
			return err
		}
	}
	return nil
}

// resourceName is a resource's identity as errors name it.
func resourceName(res ocm.Resource) string {
	id := res.Identity()
	if len(id) == 1 {
		return res.Name
	}
	return id.String()
}

// layerResource names the resource a layer holds, for errors.
func layerResource(d *ocm.Descriptor, l ocispec.Descriptor) string {
	for _, res := range d.Resources {
		if res.Access.Kind() == ocm.AccessLocalBlob && strings.Contains(res.Access.String("localReference"), l.Digest.String()) {
			return resourceName(res)
		}
	}
	return path.Base(l.Digest.String())
}
