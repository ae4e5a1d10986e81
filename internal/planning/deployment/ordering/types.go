package ordering

import (
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/hooks"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Hook is an Argo CD resource hook.
type Hook struct {
	// Type is PreSync, Sync, PostSync, SyncFail or PostDelete.
	Type string `json:"type"`
	// DeletePolicy is BeforeHookCreation (the default), HookSucceeded or
	// HookFailed, or several of them separated by commas.
	DeletePolicy string `json:"deletePolicy,omitempty"`
}

// OrderingRule places the objects of a render its target selects.
type OrderingRule struct {
	Target Target `json:"target"`
	// SyncWave: an integer or a string holding ${…}.
	SyncWave any   `json:"syncWave,omitempty"`
	Hook     *Hook `json:"hook,omitempty"`
}

// Job is an imperative step: a batch/v1 Job running an image resource of the
// component, localised like every image (the component's location, pinned by
// digest when known), as an Argo CD hook.
type Job struct {
	// Name of the Job object (may hold ${…}; a DNS label once evaluated); unique.
	Name string `json:"name"`
	// Render names the render the Job belongs to: the Job is part of the
	// output when that render is, and runs in its namespace. Without it, the
	// Job is part of the output when the whole definition renders (no
	// resource selection) and runs in the request's namespace.
	Render string `json:"render,omitempty"`
	// When is a CEL condition; the Job is left out when it is false.
	When string `json:"when,omitempty"`
	// Image names the ociImage resource the Job runs.
	Image JobImage `json:"image"`
	// Namespace of the Job (may hold ${…}); default its render's, else the
	// request's (Argo CD: the destination namespace).
	Namespace string `json:"namespace,omitempty"`
	// Command replaces the image's entrypoint; Args are its arguments. Every
	// item may hold ${…}.
	Command []string `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Env are environment variables: a value (may hold ${…}) or a key of an
	// existing Secret.
	Env []EnvVar `json:"env,omitempty"`
	// Hook defaults to {type: PreSync, deletePolicy: BeforeHookCreation}.
	Hook *Hook `json:"hook,omitempty"`
	// SyncWave orders the Job within its hook phase: an integer or ${…}.
	SyncWave any `json:"syncWave,omitempty"`
	// BackoffLimit and ActiveDeadlineSeconds are the Job's (Kubernetes'
	// defaults when omitted).
	BackoffLimit          *int64 `json:"backoffLimit,omitempty"`
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
	// ServiceAccountName runs the Job's pod as that service account (may hold ${…}).
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// JobImage names the image a Job runs.
type JobImage struct {
	// Resource is the identity of an ociImage (or ociArtifact) resource.
	Resource ocm.Identity `json:"resource"`
}

// EnvVar is an environment variable of a Job: a value, or a key of a Secret.
type EnvVar struct {
	Name         string        `json:"name"`
	Value        string        `json:"value,omitempty"`
	SecretKeyRef *SecretKeyRef `json:"secretKeyRef,omitempty"`
}

// SecretKeyRef names a key of an existing Secret (fields may hold ${…}, e.g.
// ${parameters.database.secretName}).
type SecretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// Target selects rendered objects; empty fields match anything but Kind is
// required. Fields may hold ${…}.
type Target struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Name       string `json:"name,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
}

// String names the objects a target selects ("apps/v1 Deployment ns/name").
func (t Target) String() string { return hooks.Selector(t).String() }
