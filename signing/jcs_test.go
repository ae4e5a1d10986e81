package signing

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

func decodeJSON(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

// Number cases from RFC 8785 appendix B (ECMAScript Number serialisation),
// plus the two places where jsonNormalisation/v1 (Go's encoding/json) differs.
func TestNumbers(t *testing.T) {
	for _, tc := range []struct{ in, jcs, goJSON string }{
		{"0", "0", "0"},
		{"-0", "0", "-0"},
		{"5e-324", "5e-324", "5e-324"},
		{"-5e-324", "-5e-324", "-5e-324"},
		{"1.7976931348623157e308", "1.7976931348623157e+308", "1.7976931348623157e+308"},
		{"9007199254740992", "9007199254740992", "9007199254740992"},
		{"9007199254740993", "9007199254740992", "9007199254740992"}, // beyond 2^53: rounded, as in OCM
		{"295147905179352830000", "295147905179352830000", "295147905179352830000"},
		{"1e21", "1e+21", "1e+21"},
		{"1e20", "100000000000000000000", "100000000000000000000"},
		{"0.000001", "0.000001", "0.000001"},
		{"1e-7", "1e-7", "1e-7"},
		{"1.5e-9", "1.5e-9", "1.5e-9"},
		{"123e-20", "1.23e-18", "1.23e-18"},
		{"333333333.3333333", "333333333.3333333", "333333333.3333333"},
		{"4.50", "4.5", "4.5"},
		{"2e-3", "0.002", "0.002"},
		{"1.0", "1", "1"},
		{"-12", "-12", "-12"},
	} {
		got, err := appendNumber(nil, json.Number(tc.in), true)
		if err != nil || string(got) != tc.jcs {
			t.Errorf("JCS %s = %s, %v; want %s", tc.in, got, err, tc.jcs)
		}
		got, err = appendNumber(nil, json.Number(tc.in), false)
		if err != nil || string(got) != tc.goJSON {
			t.Errorf("Go %s = %s, %v; want %s", tc.in, got, err, tc.goJSON)
		}
	}
	for _, bad := range []string{"1e400", "-1e999"} {
		if _, err := appendNumber(nil, json.Number(bad), true); !errors.Is(err, errdef.ErrInvalidDescriptor) {
			t.Errorf("%s: err = %v, want ErrInvalidDescriptor", bad, err)
		}
	}
}

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{
			// RFC 8785 §3.2.3: members sorted by UTF-16 code units, so U+1F600
			// (a surrogate pair starting 0xD83D) sorts before U+FB33.
			"utf16 key order",
			`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
		},
		{
			"string escapes",
			`["\u001f\u0008\u000c\n\r\t\"\\","<&>","\u2028\u2029","\u007f","é"]`,
			"[\"\\u001f\\b\\f\\n\\r\\t\\\"\\\\\",\"<&>\",\"\u2028\u2029\",\"\u007f\",\"é\"]",
		},
		{
			"nesting and literals",
			` { "b" : [ 1 , 2.50, true, false, null, {} , [] ], "a" : { "z": "", "y": -0 } } `,
			`{"a":{"y":0,"z":""},"b":[1,2.5,true,false,null,{},[]]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := appendCanonical(nil, decodeJSON(t, tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestEntries(t *testing.T) {
	in := `{"b":{"y":"<&>","x":[1,{}]},"a":null,"c":-0}`
	want := `[{"a":null},{"b":[{"x":[1,[]]},{"y":"\u003c\u0026\u003e"}]},{"c":-0}]`
	got, err := appendEntries(nil, decodeJSON(t, in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
