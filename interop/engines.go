//go:build interop

package interop

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/floedata/floe/internal/testdir"
)

// SkipMessage is the one line every interop test prints when it skips because
// the engines are not installed.
const SkipMessage = "interop engines not installed: run .ci/engines.sh (installs pinned Spark, Iceberg, PyIceberg, delta-rs into $HOME/.cache/floe)"

// RequiredEnv names the environment variable that turns a missing installation
// from a skip into a test failure (CI sets it after running .ci/engines.sh).
const RequiredEnv = "FLOE_INTEROP_REQUIRED"

// PinFiles are the files under interop/pins whose content selects an
// installation; .ci/engines.sh hashes the same files in the same order.
var PinFiles = []string{"requirements.txt", "constraints.txt", "pom.xml"}

// Engines describes one installation made by .ci/engines.sh, as recorded in
// its manifest $FLOE_CACHE/interop-<pins>.json. All paths are absolute.
type Engines struct {
	// Pins is the hash of the pin files the installation was made from.
	Pins string `json:"pins"`
	// Python is the venv's interpreter (pyspark, delta-spark, pyiceberg, deltalake).
	Python string `json:"python"`
	// JavaHome is the JDK Spark and the REST server run on.
	JavaHome string `json:"java_home"`
	// SparkJars go on Spark's classpath: Iceberg's Spark runtime, sqlite-jdbc, Delta.
	SparkJars []string `json:"spark_jars"`
	// RESTJar is Apache Iceberg's runnable REST catalog server.
	RESTJar string `json:"rest_jar"`
	// Versions maps each engine to its installed version (or jar file name).
	Versions map[string]string `json:"versions"`
}

// CacheDir returns where .ci/engines.sh installs: $FLOE_CACHE, or
// $HOME/.cache/floe.
func CacheDir() string {
	if d := os.Getenv("FLOE_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "floe-cache")
	}
	return filepath.Join(home, ".cache", "floe")
}

// PinHash returns the hash that names the installation for the pins in
// repoRoot/interop/pins: the first 16 hex digits of the SHA-256 of the pin
// files' contents, concatenated in PinFiles order.
func PinHash(repoRoot string) (string, error) {
	h := sha256.New()
	for _, f := range PinFiles {
		b, err := os.ReadFile(filepath.Join(repoRoot, "interop", "pins", f))
		if err != nil {
			return "", fmt.Errorf("interop: reading pin file: %w", err)
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Locate finds the installation matching the pins of the repository at
// repoRoot. It returns an error wrapping ErrEnginesMissing when the manifest is
// absent (never installed, or installed for other pins) or names files that no
// longer exist.
func Locate(repoRoot string) (*Engines, error) {
	pins, err := PinHash(repoRoot)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(CacheDir(), "interop-"+pins+".json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: no manifest %s for pins %s", ErrEnginesMissing, path, pins)
	}
	var e Engines
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("%w: manifest %s: %v", ErrEnginesMissing, path, err)
	}
	if e.Pins != pins {
		return nil, fmt.Errorf("%w: manifest %s is for pins %s, want %s", ErrEnginesMissing, path, e.Pins, pins)
	}
	need := append([]string{e.Python, e.RESTJar, e.Java()}, e.SparkJars...)
	for _, p := range need {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%w: manifest %s names %s, which is missing", ErrEnginesMissing, path, p)
		}
	}
	if len(e.SparkJars) == 0 {
		return nil, fmt.Errorf("%w: manifest %s lists no Spark jars", ErrEnginesMissing, path)
	}
	return &e, nil
}

// Java returns the path of the java binary of JavaHome.
func (e *Engines) Java() string { return filepath.Join(e.JavaHome, "bin", "java") }

var (
	locateOnce sync.Once
	located    *Engines
	locateErr  error
)

// Require returns the installation for this repository, looked up once per
// process. When there is none it skips tb with SkipMessage, or fails it when
// FLOE_INTEROP_REQUIRED is set. Safe for concurrent use.
func Require(tb testing.TB) *Engines {
	tb.Helper()
	if _, err := locateForModule(); err != nil {
		if os.Getenv(RequiredEnv) != "" {
			tb.Fatalf("%s (%v)", SkipMessage, locateErr)
		}
		tb.Skip(SkipMessage)
	}
	return located
}

// locateForModule runs Locate for the module holding the working directory,
// once per process.
func locateForModule() (*Engines, error) {
	locateOnce.Do(func() {
		root := testdir.ModuleRoot()
		if root == "" {
			locateErr = fmt.Errorf("%w: module root not found from the working directory", ErrEnginesMissing)
			return
		}
		located, locateErr = Locate(root)
	})
	return located, locateErr
}
