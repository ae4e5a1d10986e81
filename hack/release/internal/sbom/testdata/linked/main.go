// Command linked links one module besides the standard library, for the SBOM
// test.
package main

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
)

func main() {
	r, err := name.ParseReference("example.com/a/b:c")
	fmt.Println(r, err)
}
