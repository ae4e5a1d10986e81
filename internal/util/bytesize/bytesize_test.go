package bytesize

import "testing"

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{
		0:             "0 B",
		-1:            "-1 B",
		1023:          "1023 B",
		1024:          "1.0 KiB",
		1536:          "1.5 KiB",
		1<<20 - 1:     "1024.0 KiB",
		5 << 20:       "5.0 MiB",
		3<<30 + 1<<29: "3.5 GiB",
		2048 << 30:    "2048.0 GiB",
	} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
}
