package examples

import "github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"

// HostileCharts are the charts of issue 15 that a render server must survive,
// by component name suffix (example.com/hostile/<name>) and template body.
var HostileCharts = map[string]string{
	// tpl recursion: grows without end (2.7 GiB before the issue).
	"tpl": `{{ tpl .Values.a . }}`,
	// printf doubling.
	"double": `{{- $s := "0123456789abcdef" }}{{- range until 40 }}{{ $s = printf "%s%s" $s $s }}{{ end }}{{ len $s }}`,
	// a loop that takes CPU, not memory: only the deadline stops it.
	"slow": `{{- range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}`,
	// a range over large repeat strings (2.5 GiB before the issue).
	"repeat": `{{- range until 100000 }}{{ repeat 1000000 "x" }}{{ end }}`,
	// a heavy generation that keeps to its own limit: 320 MiB held for a
	// few seconds of CPU (two of them pass a shared limit of 600 MiB;
	// issue 35).
	"hold": `{{- $l := list }}{{- range until 320 }}{{ $l = append $l (repeat 1048576 "x") }}{{ end }}{{- range until 3000 }}{{ range until 3000 }}{{ end }}{{ end }}{{ len $l }}`,
	// an include fan-out: 2^30 includes (41.6 s against a 10 s deadline).
	"include": `{{- define "f" }}{{ if lt (len .) 30 }}{{ include "f" (append . 1) }}{{ include "f" (append . 1) }}{{ end }}{{ end }}{{ include "f" list }}`,
}

// HostileTemplates are whole hostile templates (templates/cm.yaml), by
// component name suffix as HostileCharts.
var HostileTemplates = map[string]string{
	// 100 000 objects (refused at twice the deadline before the issue).
	"objects": "{{- range until 100000 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x{{ . }}\n{{- end }}\n",
}

// HostileComponents are one component example.com/hostile/<name>:1.0.0 per
// hostile chart, each with the chart as resource "chart" (for the attack
// tests and hack/attackfixtures).
func HostileComponents() ([]*ocmbuild.Component, error) {
	var comps []*ocmbuild.Component
	templates := map[string]string{}
	for name, body := range HostileCharts {
		templates[name] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: \"" + body + "\"\n"
	}
	for name, body := range HostileTemplates {
		templates[name] = body
	}
	for name, tpl := range templates {
		tgz, err := ocmbuild.PackageChart(map[string][]byte{
			"Chart.yaml":          []byte("apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n"),
			"values.yaml":         []byte("a: '{{ tpl .Values.a . }}'\n"),
			"templates/cm.yaml":   []byte(tpl),
			"templates/NOTES.txt": []byte("hostile\n"),
		})
		if err != nil {
			return nil, err
		}
		comps = append(comps, &ocmbuild.Component{Name: "example.com/hostile/" + name, Version: "1.0.0", Resources: []ocmbuild.Resource{
			{Name: "chart", Type: "helmChart", MediaType: ocmbuild.MediaTypeHelmChart, Data: tgz}}})
	}
	return comps, nil
}
