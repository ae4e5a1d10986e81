package manifests

import (
	"os"
	"path/filepath"
	"testing"
)

// fixtureFile is a YAML file of the fixtures the differential tests read.
type fixtureFile struct {
	name string
	data []byte
}

// realWorldDir holds third-party charts' and trees' reference outputs: the
// team's full set beside the repository when it is there, else the subset
// in the repository's testdata/realworld.
func realWorldDir() string {
	const shared = "../../../../shared/fixtures/realworld"
	if _, err := os.Stat(shared); err == nil {
		return shared
	}
	return "../../../testdata/realworld"
}

// fixtureFiles are the repository's testdata manifests and, when ../shared
// is beside the repository, the real-world goldens (goldens says whether
// they were there).
func fixtureFiles(t testing.TB) (files []fixtureFile, goldens bool) {
	t.Helper()
	for i, pattern := range []string{"../../../testdata/src/*/*/*.yaml", realWorldDir() + "/golden/*.yaml"} {
		m, _ := filepath.Glob(pattern)
		goldens = i == 1 && len(m) > 0
		for _, name := range m {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, fixtureFile{name, data})
		}
	}
	return files, goldens
}

// RealWorldDir is realWorldDir for the package's external tests.
var RealWorldDir = realWorldDir
