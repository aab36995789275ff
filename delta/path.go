package delta

import (
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"
)

// tableRoot is a normalized table location: a local absolute path (scheme
// empty) or an URI of an object store.
type tableRoot struct {
	scheme string // "" for local paths
	// prefix is "scheme://authority" for URIs, "" for local paths.
	prefix string
	// path is the cleaned path without a trailing slash ("/data/t" or
	// "/bucket-key/t" for URIs).
	path string
}

func (r tableRoot) String() string { return r.prefix + r.path }

// join returns the location of relative, cleaned path rel under the root.
func (r tableRoot) join(rel string) string {
	if r.path == "/" {
		return r.prefix + "/" + rel
	}
	return r.prefix + r.path + "/" + rel
}

// parseRoot normalizes a table location given by the caller.
func parseRoot(location string) (tableRoot, error) {
	if location == "" {
		return tableRoot{}, fmt.Errorf("%w: empty table location", ErrNotATable)
	}
	if scheme, ok := uriScheme(location); ok {
		u, err := url.Parse(location)
		if err != nil {
			return tableRoot{}, fmt.Errorf("%w: table location %q: %v", ErrNotATable, location, err)
		}
		if scheme == "file" {
			return localRoot(u.Path)
		}
		p := path.Clean("/" + u.Path)
		return tableRoot{scheme: scheme, prefix: scheme + "://" + authority(u), path: p}, nil
	}
	return localRoot(location)
}

func localRoot(p string) (tableRoot, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return tableRoot{}, fmt.Errorf("%w: table location %q: %v", ErrNotATable, p, err)
	}
	return tableRoot{path: filepath.ToSlash(abs)}, nil
}

// authority is the authority of an object store URI: the host, after the
// user name when there is one, which for Azure locations
// (abfss://container@account.dfs.core.windows.net/path) is the container.
// A password is left out, so that a location in an error or a log never
// shows one.
func authority(u *url.URL) string {
	if u.User == nil || u.User.Username() == "" {
		return u.Host
	}
	return url.User(u.User.Username()).String() + "@" + u.Host
}

// uriScheme returns the scheme of s when s starts with one ("s3:", "file:").
// Single letters are not schemes (Windows drive letters).
func uriScheme(s string) (string, bool) {
	i := strings.IndexByte(s, ':')
	if i < 2 {
		return "", false
	}
	for j := 0; j < i; j++ {
		c := s[j]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return "", false
		}
	}
	return strings.ToLower(s[:i]), true
}

// resolve turns a path from the log (add.path, remove.path, cdc.path, a
// deletion vector "p" path) into a location. Paths are URIs: relative ones
// are percent-decoded and resolved against the table root, absolute ones
// must lie under the root. A path that leaves the root fails with
// ErrPathEscapesRoot.
func (r tableRoot) resolve(raw string) (string, error) {
	if raw == "" {
		return "", fmt.Errorf("%w: empty path", ErrCorruptLog)
	}
	if scheme, ok := uriScheme(raw); ok {
		u, err := url.Parse(raw)
		if err != nil {
			return "", fmt.Errorf("%w: path %q is not a valid URI: %v", ErrCorruptLog, raw, err)
		}
		var prefix string
		if scheme == "file" {
			if r.scheme != "" {
				return "", fmt.Errorf("%w: path %q is a local file of table %s", ErrPathEscapesRoot, raw, r)
			}
		} else {
			prefix = scheme + "://" + authority(u)
			if prefix != r.prefix {
				return "", fmt.Errorf("%w: path %q is outside table %s", ErrPathEscapesRoot, raw, r)
			}
		}
		if err := checkNUL(u.Path, raw); err != nil {
			return "", err
		}
		return r.under(prefix, u.Path, raw)
	}
	if strings.HasPrefix(raw, "/") {
		dec, err := url.PathUnescape(raw)
		if err != nil {
			return "", fmt.Errorf("%w: path %q has a bad escape: %v", ErrCorruptLog, raw, err)
		}
		if err := checkNUL(dec, raw); err != nil {
			return "", err
		}
		return r.under(r.prefix, dec, raw)
	}
	dec, err := url.PathUnescape(raw)
	if err != nil {
		return "", fmt.Errorf("%w: path %q has a bad escape: %v", ErrCorruptLog, raw, err)
	}
	if err := checkNUL(dec, raw); err != nil {
		return "", err
	}
	clean := path.Clean(dec)
	if clean == ".." || strings.HasPrefix(clean, "../") || clean == "." {
		return "", fmt.Errorf("%w: path %q resolves outside table %s", ErrPathEscapesRoot, raw, r)
	}
	return r.join(clean), nil
}

// checkNUL refuses a path whose decoded form holds a NUL byte: no file
// system or object store names a file so, and the operating system would
// answer only "invalid argument".
func checkNUL(dec, raw string) error {
	if strings.IndexByte(dec, 0) >= 0 {
		return fmt.Errorf("%w: path %q holds a NUL byte", ErrCorruptLog, raw)
	}
	return nil
}

// under checks that absolute path p (decoded) lies under the root.
func (r tableRoot) under(prefix, p, raw string) (string, error) {
	clean := path.Clean("/" + p)
	base := r.path
	if base != "/" {
		base += "/"
	}
	if prefix != r.prefix || !strings.HasPrefix(clean, base) {
		return "", fmt.Errorf("%w: path %q is outside table %s", ErrPathEscapesRoot, raw, r)
	}
	return prefix + clean, nil
}
