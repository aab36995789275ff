package delta

import (
	"fmt"
	"sort"
	"strings"
)

// maxReaderVersion is the highest protocol reader version this package reads.
const maxReaderVersion = 3

// supportedReaderFeatures are the reader table features this package
// implements. Writer-only features (changeDataFeed, inCommitTimestamp,
// appendOnly, invariants, checkConstraints, generatedColumns, identityColumns,
// domainMetadata, rowTracking, clustering, ...) need nothing from a reader.
var supportedReaderFeatures = map[string]bool{
	"deletionVectors":     true,
	"columnMapping":       true,
	"timestampNtz":        true,
	"v2Checkpoint":        true,
	"vacuumProtocolCheck": true,
}

// SupportedReaderFeatures returns the reader table features this package
// can read, sorted.
func SupportedReaderFeatures() []string {
	out := make([]string, 0, len(supportedReaderFeatures))
	for f := range supportedReaderFeatures {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// checkProtocol fails with ErrUnsupportedFeature when p needs a reader
// version or feature this package lacks.
func (t *Table) checkProtocol(p *Protocol, version int64) error {
	if p == nil {
		return fmt.Errorf("%w: table %s has no protocol action at version %d", ErrCorruptLog, t.root, version)
	}
	if p.MinReaderVersion > maxReaderVersion {
		return fmt.Errorf("%w: table %s at version %d needs reader version %d; this reader supports versions 1 to %d",
			ErrUnsupportedFeature, t.root, version, p.MinReaderVersion, maxReaderVersion)
	}
	if p.MinReaderVersion == 3 {
		var missing []string
		for _, f := range p.ReaderFeatures {
			if !supportedReaderFeatures[f] {
				missing = append(missing, f)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%w: table %s at version %d needs reader feature(s) %s; supported: %s",
				ErrUnsupportedFeature, t.root, version, strings.Join(missing, ", "), strings.Join(SupportedReaderFeatures(), ", "))
		}
	}
	return nil
}
