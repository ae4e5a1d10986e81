package generator_test

import (
	"fmt"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/generator"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// BenchmarkWarm200Versions: one request over HTTP for all 200 versions of a
// component, descriptors cached, the tag list read every time (ListTTL
// off): what a poll costs once the generator is warm.
//
//	go test -run - -bench Warm200 ./internal/frontend/generator
func BenchmarkWarm200Versions(b *testing.B) {
	reg := registrytest.Start(b)
	var comps []*ocmbuild.Component
	for i := 0; i < 200; i++ {
		comps = append(comps, app(podinfo, fmt.Sprintf("1.%d.0", i)))
	}
	reg.Push(b, "ocm", comps...)
	g, err := generator.New(generator.Options{Open: opener, ListTTL: -1})
	if err != nil {
		b.Fatal(err)
	}
	url := serveTB(b, g)
	body := []byte(`{"applicationSetName":"bench","input":{"parameters":{"repository":"` + reg.URL + `/ocm","component":"` + podinfo + `","latest":0}}}`)
	if r := postTB(b, url, testToken, body); r.status != 200 {
		b.Fatalf("%d %s", r.status, r.body)
	}
	reg.Reset()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := postTB(b, url, testToken, body); r.status != 200 {
			b.Fatalf("%d %s", r.status, r.body)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(len(reg.Requests()))/float64(b.N), "registry-requests/op")
}
