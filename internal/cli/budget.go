package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/floedata/floe/merge"
)

// memoryBudgetFlag adds --memory-budget and --temp-dir to a command that
// applies changes (floe apply, floe merge) and returns the options they
// give.
func memoryBudgetFlag(f *pflag.FlagSet) func() ([]merge.Option, error) {
	budget := f.String("memory-budget", "", "memory for the change rows (or MERGE source) and their index, e.g. 256MiB or 2GiB (default 512MiB); beyond it they spill to temporary files")
	dir := f.String("temp-dir", "", "folder for spill files (default: the system's temporary folder)")
	return func() ([]merge.Option, error) {
		var opts []merge.Option
		if *budget != "" {
			n, err := parseByteSize(*budget)
			if err != nil {
				return nil, usageError{fmt.Errorf("--memory-budget: %w", err)}
			}
			opts = append(opts, merge.WithMemoryBudget(n))
		}
		if *dir != "" {
			opts = append(opts, merge.WithTempDir(*dir))
		}
		return opts, nil
	}
}

// parseByteSize parses a size in bytes: a number with an optional unit,
// KiB, MiB, GiB, TiB (powers of 1024; K, M, G, T and KB, MB, GB, TB are
// taken as the same) or B.
func parseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') && t[i-1] != '.' {
		i--
	}
	num, unit := strings.TrimSpace(t[:i]), strings.ToUpper(strings.TrimSpace(t[i:]))
	mult := map[string]float64{"": 1, "B": 1,
		"K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10,
		"M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20,
		"G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30,
		"T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40}[unit]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || v <= 0 || v*mult >= 1<<62 {
		return 0, fmt.Errorf("%q is not a size (a positive number with an optional unit: KiB, MiB, GiB, TiB)", s)
	}
	return int64(v * mult), nil
}
