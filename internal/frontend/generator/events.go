package generator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// distributionEvents is the body of CNCF distribution notifications
// (notifications.Envelope): events of manifests and blobs pushed, pulled,
// mounted and deleted.
type distributionEvents struct {
	Events []struct {
		Action string `json:"action"`
		Target struct {
			MediaType  string `json:"mediaType"`
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
			URL        string `json:"url"`
		} `json:"target"`
		Request struct {
			Host string `json:"host"`
		} `json:"request"`
	} `json:"events"`
}

// harborEvent is a Harbor webhook payload.
type harborEvent struct {
	Type      string `json:"type"`
	EventData struct {
		Resources []struct {
			Tag         string `json:"tag"`
			ResourceURL string `json:"resource_url"`
		} `json:"resources"`
		Repository struct {
			Name         string `json:"name"`
			Namespace    string `json:"namespace"`
			RepoFullName string `json:"repo_full_name"`
		} `json:"repository"`
	} `json:"event_data"`
}

// ghcrEvent is a GitHub "package" webhook payload.
type ghcrEvent struct {
	Action  string `json:"action"`
	Package struct {
		Name        string `json:"name"`
		PackageType string `json:"package_type"`
		Owner       struct {
			Login string `json:"login"`
		} `json:"owner"`
		PackageVersion struct {
			ContainerMetadata struct {
				Tag struct {
					Name string `json:"name"`
				} `json:"tag"`
			} `json:"container_metadata"`
		} `json:"package_version"`
	} `json:"package"`
}

// parseEvent returns the tags an event says were pushed. Events of other
// kinds (pulls, deletes, pings, other packages) name none. Errors say what
// is wrong without quoting the body.
func parseEvent(kind string, h http.Header, body []byte) ([]Push, error) {
	var out []Push
	add := func(p Push) error {
		if len(out) >= maxPushesPerEvent {
			return fmt.Errorf("%w: more than %d pushes in one event", errdef.ErrLimitExceeded, maxPushesPerEvent)
		}
		out = append(out, p)
		return nil
	}
	switch kind {
	case SourceDistribution:
		var ev distributionEvents
		if err := decodeEvent(body, &ev); err != nil {
			return nil, err
		}
		for _, e := range ev.Events {
			if e.Action != "push" || e.Target.Tag == "" {
				continue // blobs, pulls, deletes, pushes by digest
			}
			host := e.Request.Host
			if u, err := url.Parse(e.Target.URL); host == "" && err == nil {
				host = u.Host
			}
			if err := add(Push{Host: host, Repository: e.Target.Repository, Tag: e.Target.Tag}); err != nil {
				return nil, err
			}
		}
	case SourceHarbor:
		var ev harborEvent
		if err := decodeEvent(body, &ev); err != nil {
			return nil, err
		}
		if ev.Type != "PUSH_ARTIFACT" {
			return nil, nil
		}
		repo := ev.EventData.Repository.RepoFullName
		if repo == "" && ev.EventData.Repository.Namespace != "" && ev.EventData.Repository.Name != "" {
			repo = ev.EventData.Repository.Namespace + "/" + ev.EventData.Repository.Name
		}
		for _, r := range ev.EventData.Resources {
			if r.Tag == "" || repo == "" {
				continue
			}
			raw := r.ResourceURL
			if !strings.Contains(raw, "://") {
				raw = "oci://" + raw
			}
			u, err := url.Parse(raw)
			if err != nil || u.Host == "" {
				return nil, fmt.Errorf("%w: Harbor event: a resource_url without a registry host", errdef.ErrInvalidInput)
			}
			if err := add(Push{Host: u.Host, Repository: repo, Tag: r.Tag}); err != nil {
				return nil, err
			}
		}
	case SourceGHCR:
		switch h.Get("X-GitHub-Event") {
		case "package":
		case "ping":
			return nil, nil
		default:
			return nil, fmt.Errorf("%w: GitHub event %s: want package", errdef.ErrInvalidInput, errdef.Quote(h.Get("X-GitHub-Event")))
		}
		var ev ghcrEvent
		if err := decodeEvent(body, &ev); err != nil {
			return nil, err
		}
		p := ev.Package
		tag := p.PackageVersion.ContainerMetadata.Tag.Name
		if ev.Action != "published" || !strings.EqualFold(p.PackageType, "container") || tag == "" || p.Owner.Login == "" || p.Name == "" {
			return nil, nil
		}
		name, err := url.PathUnescape(p.Name) // GitHub names nested packages "a%2Fb"
		if err != nil {
			return nil, fmt.Errorf("%w: GitHub package event: a package name that is not a repository path", errdef.ErrInvalidInput)
		}
		if err := add(Push{Host: "ghcr.io", Repository: strings.ToLower(p.Owner.Login) + "/" + name, Tag: tag}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func decodeEvent(body []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%w: the event is not the registry's JSON: %s", errdef.ErrInvalidInput, jsonProblem(err))
	}
	return nil
}
