package ocm

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
)

// checkPlainJSON fails when plainJSON takes data and its JSON is not
// YAMLToJSON's, byte for byte: DecodeDescriptor then decodes the same
// bytes whichever way it made them.
func checkPlainJSON(t *testing.T, data []byte) bool {
	t.Helper()
	js, ok := plainJSON(data)
	if !ok {
		return false
	}
	want, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Errorf("%.120q: plain JSON, but the YAML decoder refuses it: %v", data, err)
	} else if !bytes.Equal(js, want) {
		t.Errorf("%.120q: plain JSON\n%.300s\nYAMLToJSON\n%.300s", data, js, want)
	}
	return true
}

// What the OCM CLIs wrote, as JSON (compact and indented, as the OCM CLI
// and people write it), is plain, and made into the JSON YAMLToJSON makes.
func TestPlainJSONOfOCMDescriptors(t *testing.T) {
	// The descriptor layers OCM CLI v0.13 pushed to a registry: JSON as
	// it writes it.
	var pushed int
	err := filepath.WalkDir(fixtures.V2Path(t, "registry-storage"), func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || e.Name() != "data" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.HasPrefix(b, []byte(`{"component":`)) {
			return nil
		}
		pushed++
		if !checkPlainJSON(t, b) {
			t.Errorf("%s: a descriptor the OCM CLI pushed is not plain JSON:\n%.200s", p, b)
		}
		return nil
	})
	if err != nil || pushed < 4 {
		t.Fatalf("%d descriptors pushed by the OCM CLI: %v", pushed, err)
	}

	files, _ := filepath.Glob(filepath.Join(fixtures.Dir(t), "descriptors", "*.yaml"))
	if len(files) < 8 {
		t.Fatalf("only %d OCM CLI descriptors", len(files))
	}
	for _, f := range files {
		y, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if checkPlainJSON(t, y) {
			t.Errorf("%s: YAML taken for plain JSON", f)
		}
		compact, err := yaml.YAMLToJSON(y)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(compact, &v); err != nil {
			t.Fatal(err)
		}
		indented, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		for _, js := range [][]byte{compact, indented, append(append([]byte("\n "), indented...), "\n\n"...)} {
			if !checkPlainJSON(t, js) {
				t.Errorf("%s: its JSON is not plain:\n%.200s", f, js)
			}
			d1, err1 := DecodeDescriptor(js)
			d2, err2 := decodeThroughYAML(js)
			if err1 != nil || err2 != nil || !equalJSON(t, d1, d2) {
				t.Errorf("%s: %v / %v, or the descriptors differ", f, err1, err2)
			}
		}
	}
}

// decodeThroughYAML is DecodeDescriptor as it was: every document through
// YAMLToJSON.
func decodeThroughYAML(data []byte) (*Descriptor, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	return DecodeDescriptor(js) // JSON that YAMLToJSON wrote is its own YAMLToJSON
}

func equalJSON(t *testing.T, a, b *Descriptor) bool {
	t.Helper()
	a2, b2 := *a, *b
	a2.Raw, b2.Raw = nil, nil
	ja, err1 := json.Marshal(a2)
	jb, err2 := json.Marshal(b2)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// The shapes where YAML and JSON part: plainJSON leaves them to
// YAMLToJSON, or makes what it makes.
func TestPlainJSONIsYAMLToJSON(t *testing.T) {
	for _, tc := range []struct {
		doc   string
		plain bool
	}{
		{`{"a":"b","c":[1,-2,true,false,null,{}],"d":{"e":""}}`, true},
		{"{\n  \"a\": [\n    1,\n    2\n  ]\n}\n", true},
		{`{"b":1,"a":2,"B":3}`, true},
		{`{"a":1,"a":2}`, true},
		{`{"a":{"x":1},"a":{"y":2}}`, true},
		{`{"a":"<&>\u003c\u0026 \" \\ \b \f \n \r \t \u0041 \u00e9 \u2028 \uffff \u0000 \u001f \u007f \u0085 \ufeff"}`, true},
		{`{"a":"# not a comment", "b": "&anchor *alias !tag %dir @at ` + "`" + `tick", "c": "- x", "d": "? x", "e": ": x", "f": "--- x", "g": "'q'"}`, true},
		{`{"yes":"no","on":"off","null":"~","true":"y"}`, true},
		{`{"n":123456789012345,"m":-123456789012345,"z":0}`, true},
		{`[1,2,3]`, true},
		{`"a string"`, true},
		{`12`, true},
		{`null`, true},
		{`{}`, true},
		{`[]`, true},
		{"[\n-1,\n0\n]", true},
		{`{"<<":{"a":1}}`, false},
		{`{"a":[{"<<":{"a":1}}]}`, false},
		{`{"a":"\ud83d\ude00"}`, false},
		{`{"a":"\uD800"}`, false},
		{`{"n":1234567890123456}`, false},
		{`{"n":1.5}`, false},
		{`{"n":1.0}`, false},
		{`{"n":1e3}`, false},
		{`{"n":1E3}`, false},
		{`{"n":-0}`, false},
		{"{\"a\":\t1}", false},
		{"{\"a\":1}\r\n", false},
		{"{\"a\":\"caf\xc3\xa9\"}", false},
		{"{\"a\":\"\xff\"}", false},
		{"\xef\xbb\xbf{}", false},
		{`{"a":1}{"b":2}`, false},
		{`{"a":1} x`, false},
		{`{"a":1`, false},
		{`{"a":"x\q"}`, false},
		{`{"a":"x\/y"}`, false},
		{`{a: 1}`, false},
		{"a: 1\n", false},
		{"", false},
		{" ", false},
		{`{"a":1,}`, false},
		{strings.Repeat("[", 20000) + strings.Repeat("]", 20000), false},
		// YAML's simple keys: one line, at most 1024 characters to the colon.
		{`{"` + strings.Repeat("k", 990) + `":1}`, true},
		{`{"` + strings.Repeat("k", 1100) + `":1}`, false},
		{`{"a":"` + strings.Repeat("v", 1100) + `"}`, true},
		{"{\"a\"\n:1}", false},
		{"{\"a\" :\n1}", true},
	} {
		if got := checkPlainJSON(t, []byte(tc.doc)); got != tc.plain {
			t.Errorf("%.80q: plain %v, want %v", tc.doc, got, tc.plain)
		}
	}
}

// FuzzPlainJSON: whatever plainJSON takes, YAMLToJSON reads to the same
// JSON. Seeds: JSON shapes where YAML and JSON part, and a descriptor.
func FuzzPlainJSON(f *testing.F) {
	for _, s := range []string{
		`{"component":{"name":"ocm.example/a","version":"1.0.0","labels":[{"name":"l","value":{"b":[1,"<x>"]}}]},"meta":{"schemaVersion":"v2"}}`,
		"{\n  \"a\": [\n    -1,\n    \"\\u00e9\\n\"\n  ],\n  \"a\": null\n}\n",
		`{"<<":{"a":1}}`, `{"a":"\ud83d\ude00"}`, `{"n":1.5e3}`, `{"n":-0}`, `"\/"`, `[123456789012345]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkPlainJSON(t, data)
	})
}
