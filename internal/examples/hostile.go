package examples

import "github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/ocmbuild"

// HostileCharts are the charts of issue 15 that a render server must survive,
// by component name suffix (example.com/hostile/<name>) and template body.
var HostileCharts = map[string]string{
	// tpl recursion: grows without end (2.7 GiB before the issue).
	"tpl": `{{ tpl .Values.a . }}`,
	// printf doubling.
	"double": `{{- $s := "0123456789abcdef" }}{{- range until 40 }}{{ $s = printf "%s%s" $s $s }}{{ end }}{{ len $s }}`,
	// a loop that takes CPU, not memory: only the deadline stops it.
	"slow": `{{- range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}`,
}

// HostileComponents are one component example.com/hostile/<name>:1.0.0 per
// hostile chart, each with the chart as resource "chart" (for the attack
// tests and hack/attackfixtures).
func HostileComponents() ([]*ocmbuild.Component, error) {
	var comps []*ocmbuild.Component
	for name, body := range HostileCharts {
		tgz, err := ocmbuild.PackageChart(map[string][]byte{
			"Chart.yaml":          []byte("apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n"),
			"values.yaml":         []byte("a: '{{ tpl .Values.a . }}'\n"),
			"templates/cm.yaml":   []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: \"" + body + "\"\n"),
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
