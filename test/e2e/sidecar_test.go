package e2e

import (
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// installedSidecar is the sidecar container of
// manifests/install/repo-server-sidecar.yaml: what the harness runs.
type installedSidecar struct {
	Command []string `json:"command"`
	Env     []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"env"`
	VolumeMounts []struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
	} `json:"volumeMounts"`
}

func readInstalledSidecar() (*installedSidecar, error) {
	b, err := os.ReadFile(path(repoRoot, "manifests", "install", "repo-server-sidecar.yaml"))
	if err != nil {
		return nil, err
	}
	var patch struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Name string `json:"name"`
						installedSidecar
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &patch); err != nil {
		return nil, fmt.Errorf("manifests/install/repo-server-sidecar.yaml: %w", err)
	}
	for _, c := range patch.Spec.Template.Spec.Containers {
		if c.Name == pluginName {
			return &c.installedSidecar, nil
		}
	}
	return nil, fmt.Errorf("manifests/install/repo-server-sidecar.yaml: no container %s", pluginName)
}

// sidecarCommand is the installed sidecar's command and environment for
// replica sfx ("" for the first), each container path replaced by the run's
// directory for the volume mounted there (the plugins directory the
// repo-server dials, /tmp, the cache, the registry credentials) and the
// image's /usr/local/bin by the plugin built for the run. A volume the
// harness has no directory for fails the run: the installed shape changed,
// and the harness must follow it.
func (c *cluster) sidecarCommand(sfx string) (args, env []string, err error) {
	s, err := readInstalledSidecar()
	if err != nil {
		return nil, nil, err
	}
	dirs := map[string]string{
		"plugins":                    path(c.dir, "plugins"+sfx),
		"argocd-ocm-plugin-tmp":      path(c.dir, "sidecar-tmp"+sfx),
		"argocd-ocm-plugin-cache":    path(c.dir, "cache"+sfx),
		"argocd-ocm-plugin-registry": path(c.dir, "docker"),
		"argocd-ocm-plugin-policy":   path(c.dir, "policy"),
	}
	local := map[string]string{"/usr/local/bin": pluginBin}
	for _, m := range s.VolumeMounts {
		d, ok := dirs[m.Name]
		if !ok {
			return nil, nil, fmt.Errorf("the installed sidecar mounts volume %s at %s: the harness has no directory for it", m.Name, m.MountPath)
		}
		local[m.MountPath] = d
	}
	if local["/tmp"] == "" {
		return nil, nil, fmt.Errorf("the installed sidecar mounts no /tmp")
	}
	localPath := func(p string) string {
		for mount, dir := range local {
			if p == mount || strings.HasPrefix(p, mount+"/") {
				return dir + p[len(mount):]
			}
		}
		return p
	}
	if len(s.Command) == 0 {
		return nil, nil, fmt.Errorf("the installed sidecar has no command")
	}
	for _, a := range s.Command {
		args = append(args, localPath(a))
	}
	if _, err := os.Stat(args[0]); err != nil {
		return nil, nil, fmt.Errorf("the installed sidecar's command %s: %w", s.Command[0], err)
	}
	// TMPDIR is the /tmp volume's directory (baseEnv); so is serve's own
	// socket, /tmp/argocd-ocm-plugin/render.sock in the container, which
	// replicas would otherwise share on the host.
	env = append(c.baseEnv("sidecar-tmp"+sfx), "ARGOCD_OCM_SERVER_SOCKET="+localPath("/tmp/argocd-ocm-plugin/render.sock"))
	for _, e := range s.Env {
		env = append(env, e.Name+"="+localPath(e.Value))
	}
	return args, env, nil
}
