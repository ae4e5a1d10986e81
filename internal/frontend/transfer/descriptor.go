package transfer

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// descriptorFile is the one file of a descriptor layer tar.
const descriptorFile = "component-descriptor.yaml"

// descriptorDocument extracts the descriptor document from a descriptor
// layer (a tar holding component-descriptor.yaml, or raw YAML or JSON).
func descriptorDocument(mediaType string, raw []byte) ([]byte, error) {
	if !strings.HasSuffix(mediaType, "+tar") {
		return raw, nil
	}
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: descriptor layer holds no %s", errdef.ErrInvalidDescriptor, descriptorFile)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: descriptor layer: %v", errdef.ErrInvalidDescriptor, err)
		}
		if strings.TrimPrefix(h.Name, "/") == descriptorFile && h.Typeflag == tar.TypeReg {
			return io.ReadAll(io.LimitReader(tr, ocm.MaxDescriptorSize+1))
		}
	}
}

// descriptorLayer writes a descriptor document as the OCM CLI's descriptor
// layer: a USTAR archive of one file, mode 0, owner 0, time 2022-01-01.
func descriptorLayer(doc []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := archive.NewWriter(&buf, archive.WithUSTAR(), archive.WithFileMode(0))
	if err := tw.File(descriptorFile, int64(len(doc)), bytes.NewReader(doc)); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// document is a descriptor as a generic tree, rewritten in place and
// serialised as the OCM CLI does (JSON model → YAML with sorted keys), so
// that what is not rewritten stays byte for byte what it was.
type document struct {
	root map[string]any
	v3   bool
}

func parseDocument(raw []byte) (*document, error) {
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errdef.ErrInvalidDescriptor, err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber() // numbers survive as written
	var root map[string]any
	if err := dec.Decode(&root); err != nil || root == nil {
		return nil, fmt.Errorf("%w: descriptor is not an object", errdef.ErrInvalidDescriptor)
	}
	d := &document{root: root}
	if _, ok := root["apiVersion"]; ok {
		d.v3 = true
	}
	return d, nil
}

// component is where v2 keeps resources and repository contexts
// (component), v3alpha1 resources (spec) and contexts (top level).
func (d *document) section(name string) (map[string]any, error) {
	m, ok := d.root[name].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: descriptor has no %s", errdef.ErrInvalidDescriptor, name)
	}
	return m, nil
}

func (d *document) resources() ([]any, error) {
	sec := "component"
	if d.v3 {
		sec = "spec"
	}
	m, err := d.section(sec)
	if err != nil {
		return nil, err
	}
	l, _ := m["resources"].([]any)
	return l, nil
}

// setAccess replaces the access of resource i.
func (d *document) setAccess(i int, access map[string]any) error {
	l, err := d.resources()
	if err != nil {
		return err
	}
	if i >= len(l) {
		return fmt.Errorf("%w: resource %d is missing", errdef.ErrInvalidDescriptor, i)
	}
	r, ok := l[i].(map[string]any)
	if !ok {
		return fmt.Errorf("%w: resource %d is not an object", errdef.ErrInvalidDescriptor, i)
	}
	r["access"] = access
	return nil
}

// appendContext appends a repository context, as the OCM CLI does on every
// transfer into a registry (not into a CTF, an intermediate repository).
func (d *document) appendContext(ctx map[string]any) error {
	m := d.root
	if !d.v3 {
		var err error
		if m, err = d.section("component"); err != nil {
			return err
		}
	}
	l, _ := m["repositoryContexts"].([]any)
	m["repositoryContexts"] = append(l, ctx)
	return nil
}

func (d *document) marshal() ([]byte, error) {
	j, err := json.Marshal(d.root)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(j)
}
