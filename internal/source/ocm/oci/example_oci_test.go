package oci_test

import (
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
)

func ExampleParseSpec() {
	for _, s := range []string{
		"ghcr.io/acme/ocm",
		"http://127.0.0.1:5000/ocm",
		"type: OCIRegistry\nbaseUrl: https://harbor.example.com\nsubPath: platform/ocm\n",
		`{"type": "CommonTransportFormat/v1", "filePath": "./bundle.ctf"}`,
	} {
		sp, err := oci.ParseSpec(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s %s\n", sp.Type, sp)
	}
	_, err := oci.ParseSpec("https://user:password@ghcr.io/acme")
	fmt.Println(err)
	// Output:
	// OCIRegistry ghcr.io/acme/ocm
	// OCIRegistry http://127.0.0.1:5000/ocm
	// OCIRegistry https://harbor.example.com/platform/ocm
	// CommonTransportFormat ./bundle.ctf
	// invalid input: baseUrl must not carry credentials; use the environment or a docker config
}

func ExampleRepository_Resolve() {
	// New contacts nothing; the first lookup does.
	repo, err := oci.New("http://127.0.0.1:5078/ocm", oci.WithCache(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	// relativeOciReference is relative to the registry host, not the sub path.
	abs, _ := repo.Resolve("ocm/example.com/fixtures/podinfo-app/podinfo-mini:0.1.0")
	fmt.Println(abs)
	_, err = repo.Resolve("http://evil.example.com/x:1")
	fmt.Println(err)
	// Output:
	// http://127.0.0.1:5078/ocm/example.com/fixtures/podinfo-app/podinfo-mini:0.1.0
	// invalid input: relativeOciReference "http://evil.example.com/x:1" must be repository[:tag][@digest] without scheme or leading /
}
