// Package bytesize writes a size in bytes for people: "512 B", "1.5 KiB",
// "3.2 MiB", "1.0 GiB" (binary units, one decimal), as progress lines and
// summaries show it.
package bytesize

import "fmt"

// Format writes n bytes in the largest binary unit (up to GiB) it reaches.
func Format(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
