//go:build interop

package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/floedata/floe/internal/rowjson"
)

// Spark is one long-lived PySpark process (master local[2]) with Iceberg's
// Spark runtime (IcebergSparkSessionExtensions), the SQLite JDBC driver and
// Delta Lake (DeltaSparkSessionExtension, DeltaCatalog as spark_catalog) on its
// classpath, its session time zone and JVM in UTC.
//
// Work happens in named sessions: isolated Spark sessions sharing one
// SparkContext, each with its own SQL configuration and so its own catalogs,
// which lets every test mount its own warehouse under the catalog name "floe".
// The session "default" always exists and has no Iceberg catalog besides
// Delta's spark_catalog.
//
// Methods are safe for concurrent use; requests are served one at a time.
type Spark struct {
	w *worker
	// Version is Spark's version as reported by the running session.
	Version string
}

// SparkOptions configures StartSpark.
type SparkOptions struct {
	// Dir is a scratch directory for Spark's own warehouse, Derby and local
	// files. Required; it must exist.
	Dir string
	// Conf is applied after the defaults at startup and may override them
	// (static settings such as spark.sql.extensions only take effect here).
	Conf map[string]string
	// DriverMemory is spark.driver.memory; zero means "2g".
	DriverMemory string
}

// StartSpark starts a PySpark worker and its SparkSession. It returns when
// Spark answers, or with an error (ErrWorkerExited with Spark's stderr tail, or
// ctx's error) when it does not. The caller must Close it.
func StartSpark(ctx context.Context, e *Engines, opts SparkOptions) (*Spark, error) {
	if opts.Dir == "" {
		return nil, fmt.Errorf("interop: StartSpark: SparkOptions.Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "local"), 0o755); err != nil {
		return nil, err
	}
	mem := opts.DriverMemory
	if mem == "" {
		mem = "2g"
	}
	conf := map[string]string{
		"spark.jars": strings.Join(e.SparkJars, ","),
		"spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions," +
			"io.delta.sql.DeltaSparkSessionExtension",
		"spark.sql.catalog.spark_catalog":           "org.apache.spark.sql.delta.catalog.DeltaCatalog",
		"spark.sql.catalogImplementation":           "in-memory",
		"spark.sql.session.timeZone":                "UTC",
		"spark.driver.extraJavaOptions":             "-Duser.timezone=UTC -Dderby.system.home=" + dir,
		"spark.driver.memory":                       mem,
		"spark.driver.host":                         "127.0.0.1",
		"spark.driver.bindAddress":                  "127.0.0.1",
		"spark.ui.enabled":                          "false",
		"spark.ui.showConsoleProgress":              "false",
		"spark.sql.shuffle.partitions":              "2",
		"spark.default.parallelism":                 "2",
		"spark.sql.warehouse.dir":                   filepath.Join(dir, "spark-warehouse"),
		"spark.local.dir":                           filepath.Join(dir, "local"),
		"spark.databricks.delta.snapshotPartitions": "2",
	}
	for k, v := range opts.Conf {
		conf[k] = v
	}
	w, err := startWorker(ctx, e, "spark", dir, []string{"SPARK_LOCAL_IP=127.0.0.1"})
	if err != nil {
		return nil, err
	}
	var started struct {
		SparkVersion string `json:"spark_version"`
	}
	if err := w.call(ctx, "spark_start", map[string]any{"conf": conf}, &started); err != nil {
		_ = w.close(context.Background())
		return nil, fmt.Errorf("interop: starting Spark: %w", err)
	}
	return &Spark{w: w, Version: started.SparkVersion}, nil
}

// NewSession creates the session name, replacing any session of that name, with
// conf set on its SQL configuration (catalogs: see SparkJDBCCatalog and
// SparkRESTCatalog). The name "default" is reserved.
func (s *Spark) NewSession(ctx context.Context, name string, conf map[string]string) error {
	if conf == nil {
		conf = map[string]string{}
	}
	return s.w.call(ctx, "session", map[string]any{"name": name, "conf": conf}, nil)
}

// DropSession forgets the session name; dropping an unknown name is not an
// error.
func (s *Spark) DropSession(ctx context.Context, name string) error {
	return s.w.call(ctx, "drop_session", map[string]any{"name": name}, nil)
}

// SQL runs one statement in session and returns its result rows (none for
// DDL and DML, whose effects are applied before SQL returns). Spark's own
// failures are *EngineError values (errors.Is(err, ErrEngine)).
func (s *Spark) SQL(ctx context.Context, session, query string) (*rowjson.Table, error) {
	raw, err := s.w.callRaw(ctx, "sql", map[string]any{"session": session, "sql": query})
	if err != nil {
		return nil, err
	}
	return rowjson.Decode(raw)
}

// Exec runs statements in order in session, discarding results, and stops at
// the first failure, which names the statement's position.
func (s *Spark) Exec(ctx context.Context, session string, statements ...string) error {
	for i, st := range statements {
		args := map[string]any{"session": session, "sql": st, "collect": false}
		if err := s.w.call(ctx, "sql", args, nil); err != nil {
			return fmt.Errorf("statement %d (%s): %w", i+1, truncate(st, 120), err)
		}
	}
	return nil
}

// Python runs a Python snippet in the Spark worker with `spark` bound to
// session's SparkSession and `args` to vars; the value the snippet leaves in
// `result` is returned as JSON (DataFrames and Arrow tables as rowjson tables).
// It is the escape hatch for what SQL cannot say.
func (s *Spark) Python(ctx context.Context, session, code string, vars map[string]any) (json.RawMessage, error) {
	return s.w.callRaw(ctx, "exec", map[string]any{"session": session, "code": code, "vars": vars})
}

// Close stops Spark and its process. Safe to call more than once.
func (s *Spark) Close() error { return s.w.close(context.Background()) }

// DeltaPath returns the Spark SQL identifier of the Delta table stored at
// path: delta.`path`, with backticks in path doubled.
func DeltaPath(path string) string {
	return "delta.`" + strings.ReplaceAll(path, "`", "``") + "`"
}

// DeltaChanges reads the change data feed of the Delta table at path with
// delta-spark (table_changes_by_path), from version start to end inclusive; a
// negative end means the latest version.
func (s *Spark) DeltaChanges(ctx context.Context, session, path string, start, end int64) (*rowjson.Table, error) {
	q := fmt.Sprintf("SELECT * FROM table_changes_by_path(%s, %d)", sqlString(path), start)
	if end >= 0 {
		q = fmt.Sprintf("SELECT * FROM table_changes_by_path(%s, %d, %d)", sqlString(path), start, end)
	}
	return s.SQL(ctx, session, q)
}

// sqlString quotes s as a Spark SQL string literal.
func sqlString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
