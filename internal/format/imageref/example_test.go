package imageref_test

import (
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
)

func ExampleParse() {
	r, err := imageref.Parse("http://127.0.0.1:5078/ocm/example.com/fixtures/podinfo-app/podinfo-mini:0.1.0@sha256:8cc80185ab75ed0521e3e8f67c77c9a31132e90e7e0ff19c4360db6641eacafa")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Scheme, r.Registry, r.Repository, r.Tag)
	fmt.Println("asks for", r.Ref()) // the digest wins over the tag
	// Output:
	// http 127.0.0.1:5078 ocm/example.com/fixtures/podinfo-app/podinfo-mini 0.1.0
	// asks for sha256:8cc80185ab75ed0521e3e8f67c77c9a31132e90e7e0ff19c4360db6641eacafa
}
